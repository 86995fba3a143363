"""A layer called on TensorFlow's symbolic tensors, inside ``tf.data.Dataset.map``.

keras.io's transfer-learning guide resizes and augments its images in the input pipeline
(``train_ds.map(lambda x, y: (resize_fn(x), y))``); Keras 3 runs its layers with TensorFlow ops there. Our
layers compute on NumPy values, so the call runs on the values the pipeline hands over, through
``tf.numpy_function``: the layer's eager call, element by element as the pipeline runs, on the host.
The result's dtype is the one the layer's eager call gives (an image of uint8 resizes to float32, as in Keras),
read from one call on zeros when the pipeline is traced; its static shape is the layer's ``compute_output_shape`` of the input's,
where the layer can say (it stays unknown otherwise: ``batch()`` still stacks the values).
"""

from __future__ import annotations

import sys

import numpy as np

from flexflow_keras.utils import tree


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
    return any(is_graph_tensor(x) for x in tree.flatten(values))


def _static_shape(layer, shape):
    """The layer's output shape for an input of TensorFlow's static `shape` (a list), or None."""
    try:
        out = layer.compute_output_shape(tuple(shape))
    except Exception:  # a layer that cannot say (or not for an unbatched input): the shape stays unknown
        return None
    if isinstance(out, (list, tuple)) and all(s is None or isinstance(s, (int, np.integer)) for s in out):
        return [None if s is None else int(s) for s in out]
    return None


def _output_dtype(layer, shape, in_dtype: np.dtype, rest: tuple, kwargs: dict) -> np.dtype:
    """The dtype the layer's eager call gives for inputs of `in_dtype`: read from one call on zeros (open
    dims taken as 32), as tf.numpy_function needs it before the pipeline runs; the layer's compute dtype for
    numbers when that call fails."""
    if shape is not None:
        try:
            probe = np.zeros([32 if s is None else s for s in shape], in_dtype)
            return np.asarray(layer(probe, *rest, **kwargs)).dtype
        except Exception:  # a layer that needs other sizes: the usual rule below
            pass
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
    out_dtype = _output_dtype(layer, shape, np.dtype(inputs.dtype.as_numpy_dtype), rest, kwargs)

    def run(values):
        return np.asarray(layer(values, *rest, **kwargs), dtype=out_dtype)

    out = tf.numpy_function(run, [inputs], tf.as_dtype(out_dtype), stateful=True, name=f"{layer.name}_call")
    static = _static_shape(layer, shape) if shape is not None else None
    if static is not None:
        out.set_shape(static)
    return out
