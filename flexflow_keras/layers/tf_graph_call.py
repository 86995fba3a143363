"""A layer called on TensorFlow's symbolic tensors, inside ``tf.data.Dataset.map``.

keras.io's transfer-learning guide resizes and augments its images in the input pipeline
(``train_ds.map(lambda x, y: (resize_fn(x), y))``); Keras 3 runs its layers with TensorFlow ops there. Our
layers compute on NumPy values, so the call runs on the values the pipeline hands over, through
``tf.numpy_function``: the layer's eager call, element by element as the pipeline runs, on the host.
The result's dtype is the one the layer's eager call gives (an image of uint8 resizes to float32, as in Keras),
read from one call on zeros when the pipeline is traced (open dims taken as 32). That probe leaves the layer
as it was: an unbuilt layer is built first for the input's real static shape, as Keras' call on the symbolic
tensor builds it, and the random draws the probe makes (augmentation layers' eager-call counters, the
framework's generator) are put back, so the pipeline's augmentations are those of a run without the probe.
The static shape is the layer's ``compute_output_shape`` of the input's where the layer can say (it stays
unknown otherwise: ``batch()`` still stacks the values). A layer that cannot say (a ValueError, TypeError or
NotImplementedError) is logged at debug level; any other error, a bug in the layer, is logged as a warning
with its traceback; both fall back to what the pipeline can do without it.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading

import numpy as np

from flexflow_keras.utils import rng, tree

log = logging.getLogger("flexflow_keras")

_running = threading.local()


@contextlib.contextmanager
def pipeline_call():
    """Mark the layer calls inside as a dataset map's (ours runs a map's function eagerly: data/slices.py)."""
    _running.depth = getattr(_running, "depth", 0) + 1
    try:
        yield
    finally:
        _running.depth -= 1


def in_pipeline() -> bool:
    """Whether the layer calls running now are a dataset map's (Keras 3 runs them as TensorFlow graph ops,
    where a Resizing of uint8 images gives float32; an eager call gives uint8)."""
    return getattr(_running, "depth", 0) > 0


# what a layer raises when it cannot say (or run) for this input: the shape or dtype is then left to the rule
_CANNOT_SAY = (ValueError, TypeError, NotImplementedError)


def _tensorflow():
    """TensorFlow, when the script imported it (a tf.data pipeline needs it); else None. Never imports it."""
    return sys.modules.get("tensorflow")


def is_graph_tensor(x) -> bool:
    """Whether x is a TensorFlow tensor without values (a tf.data map's or a tf.function's argument)."""
    tf = _tensorflow()
    if tf is None or not type(x).__module__.startswith("tensorflow"):
        return False
    return bool(tf.is_tensor(x)) and not hasattr(x, "numpy")


def holds_graph_tensor(values) -> bool:
    """Whether `values` (a tensor or a structure of them) holds a TensorFlow graph tensor; cheap when
    TensorFlow is not imported or `values` is one array (Layer.__call__ asks on every call)."""
    if "tensorflow" not in sys.modules:
        return False
    if not isinstance(values, (list, tuple, dict)):
        return is_graph_tensor(values)
    return any(is_graph_tensor(x) for x in tree.flatten(values))


def _fallback(layer, what: str, error: Exception) -> None:
    """Log why `what` of `layer` falls back: debug for a layer that cannot say, a warning for another error."""
    if isinstance(error, _CANNOT_SAY):
        log.debug("Layer '%s' in a tf.data map: %s falls back (%s: %s).", layer.name, what,
                  type(error).__name__, error)
    else:
        log.warning("Layer '%s' in a tf.data map: %s falls back after an unexpected %s: %s", layer.name, what,
                    type(error).__name__, error, exc_info=error)


def _build_for(layer, shape, in_dtype: np.dtype) -> None:
    """Build an unbuilt layer for the input's static `shape`, as Keras' call on the symbolic tensor does."""
    from flexflow_keras.ops.graph import KerasTensor

    if layer.built or shape is None:
        return
    try:
        layer._maybe_build(KerasTensor(tuple(shape), "string" if in_dtype.kind in "OSU" else in_dtype.name))
    except Exception as error:  # noqa: BLE001 - logged by _fallback; the eager call builds it on the values
        _fallback(layer, f"building for the input shape {tuple(shape)}", error)


def _static_shape(layer, shape):
    """The layer's output shape for an input of TensorFlow's static `shape` (a list), or None."""
    try:
        out = layer.compute_output_shape(tuple(shape))
    except Exception as error:  # noqa: BLE001 - logged by _fallback; the shape stays unknown
        _fallback(layer, f"compute_output_shape({tuple(shape)})", error)
        return None
    if isinstance(out, (list, tuple)) and all(s is None or isinstance(s, (int, np.integer)) for s in out):
        return [None if s is None else int(s) for s in out]
    return None


def _layers_in(layer) -> list:
    """`layer` and the layers it holds, at any depth."""
    found, stack = [], [layer]
    while stack:
        item = stack.pop()
        if all(item is not x for x in found):
            found.append(item)
            stack.extend(item._sublayers())
    return found


@contextlib.contextmanager
def _draws_kept(layer):
    """Put back the random state an eager call of `layer` advances: the eager-call counters of its (nested)
    augmentation layers, whose draws follow them, and the framework generator's state."""
    counters = [(item, item.__dict__["_eager_calls"]) for item in _layers_in(layer)
                if "_eager_calls" in item.__dict__]
    state = rng.generator().bit_generator.state
    try:
        yield
    finally:
        for item, count in counters:
            item._eager_calls = count
        rng.generator().bit_generator.state = state


def _output_dtype(layer, shape, in_dtype: np.dtype, rest: tuple, kwargs: dict) -> np.dtype:
    """The dtype the layer's eager call gives for inputs of `in_dtype`: read from one call on zeros (open
    dims taken as 32), as tf.numpy_function needs it before the pipeline runs; the layer's compute dtype for
    numbers when that call cannot run (or the layer is still unbuilt: the probe would build it for its
    made-up shape)."""
    if shape is not None and layer.built:
        try:
            probe = np.zeros([32 if s is None else s for s in shape], in_dtype)
            with _draws_kept(layer), pipeline_call():
                return np.asarray(layer(probe, *rest, **kwargs)).dtype
        except Exception as error:  # noqa: BLE001 - logged by _fallback; the usual rule below
            _fallback(layer, "the output dtype probe", error)
    return np.dtype(layer.compute_dtype) if in_dtype.kind in "iuf" else in_dtype


def call(layer, inputs, rest: tuple, kwargs: dict):
    """``layer(inputs, *rest, **kwargs)`` for a single TensorFlow graph tensor `inputs`: one tf.numpy_function
    running the layer's eager call."""
    tf = _tensorflow()
    if not is_graph_tensor(inputs) or holds_graph_tensor([list(rest), list(kwargs.values())]):
        raise TypeError(f"Layer '{layer.name}' was called on TensorFlow symbolic tensors (inside tf.data's map or a "
                        f"tf.function) with inputs of type {type(inputs).__name__} and other tensor arguments; "
                        f"flexflow_keras runs a layer there only on one tensor. Call it on that tensor alone, or "
                        f"on NumPy arrays outside the pipeline.")
    shape = inputs.shape.as_list() if inputs.shape.rank is not None else None
    in_dtype = np.dtype(inputs.dtype.as_numpy_dtype)
    _build_for(layer, shape, in_dtype)
    static = _static_shape(layer, shape) if shape is not None else None
    out_dtype = _output_dtype(layer, shape, in_dtype, rest, kwargs)

    def run(values):
        with pipeline_call():
            return np.asarray(layer(values, *rest, **kwargs), dtype=out_dtype)

    out = tf.numpy_function(run, [inputs], tf.as_dtype(out_dtype), stateful=True, name=f"{layer.name}_call")
    if static is not None:
        out.set_shape(static)
    return out
