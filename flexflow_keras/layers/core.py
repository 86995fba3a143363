"""Core layers: Dense, Activation, Dropout, Flatten, Reshape, Permute, Embedding, Lambda."""

from __future__ import annotations

import dataclasses
import inspect
import logging
import math

import numpy as np

from flexflow_keras import activations, constraints, initializers, ops, regularizers
from flexflow_keras.errors import GraphError, ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.input_spec import InputSpec, flatten_hint
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.utils import rng

log = logging.getLogger("flexflow_keras")


def _activation_fn(value):
    """A layer's `activation` attribute as a function (None and names, as a script may assign them)."""
    return activations.get(value) if value is None or isinstance(value, str) else value


def apply_activation(x, fn):
    """`fn(x)` unless `fn` is the identity (None too: ``layer.activation = None`` after construction)."""
    return x if fn is None or fn is activations.linear else fn(x)


def set_kernel_bias_args(layer, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                         bias_regularizer, kernel_constraint, bias_constraint) -> None:
    """Resolve the activation / use_bias / kernel_* / bias_* arguments of a kernel-and-bias layer (Dense,
    Conv2D) and set them on `layer` under the same names."""
    layer.activation = activations.get(activation)
    layer.use_bias = bool(use_bias)
    layer.kernel_initializer = initializers.get(kernel_initializer)
    layer.bias_initializer = initializers.get(bias_initializer)
    layer.kernel_regularizer = regularizers.get(kernel_regularizer)
    layer.bias_regularizer = regularizers.get(bias_regularizer)
    layer.kernel_constraint = constraints.get(kernel_constraint)
    layer.bias_constraint = constraints.get(bias_constraint)


def add_kernel_bias(layer, kernel_shape: tuple, bias_size: int) -> None:
    """Create ``layer.kernel`` of `kernel_shape` and, with `use_bias`, ``layer.bias`` of ``(bias_size,)``,
    with the initializers, regularizers and constraints `set_kernel_bias_args` set."""
    layer.kernel = layer.add_weight(name="kernel", shape=kernel_shape, initializer=layer.kernel_initializer,
                                    regularizer=layer.kernel_regularizer, constraint=layer.kernel_constraint)
    if layer.use_bias:
        layer.bias = layer.add_weight(name="bias", shape=(bias_size,), initializer=layer.bias_initializer,
                                      regularizer=layer.bias_regularizer, constraint=layer.bias_constraint)


def kernel_bias_config(layer) -> dict:
    """The config entries of `set_kernel_bias_args`' arguments, serialized."""
    return {"activation": activations.serialize(layer.activation), "use_bias": layer.use_bias,
            "kernel_initializer": initializers.serialize(layer.kernel_initializer),
            "bias_initializer": initializers.serialize(layer.bias_initializer),
            "kernel_regularizer": regularizers.serialize(layer.kernel_regularizer),
            "bias_regularizer": regularizers.serialize(layer.bias_regularizer),
            "kernel_constraint": constraints.serialize(layer.kernel_constraint),
            "bias_constraint": constraints.serialize(layer.bias_constraint)}


class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` on the last axis.

    Args:
        units: output size (positive integer).
        activation: name or function; None is linear. Element-wise activations are fused into the
            dense op; ``"softmax"`` is a separate softmax op (so the loss can fuse it).
        use_bias: whether to add a bias.
        kernel_initializer, bias_initializer: initializers (``glorot_uniform``, ``zeros``).
        kernel_regularizer, bias_regularizer: weight penalties.
        kernel_constraint, bias_constraint: projections after each update.

    Example:
        >>> Dense(10, activation="softmax", name="fc1")
    """

    _float_math = True
    supports_masking = True

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.units = _args.positive_int(self, "units", units)
        set_kernel_bias_args(self, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                             bias_regularizer, kernel_constraint, bias_constraint)
        self.input_spec = InputSpec(min_ndim=2)
        self.kernel = self.bias = None

    def build(self, input_shape):
        in_dim = input_shape[-1]
        if in_dim is None:
            raise ShapeError(f"{_args.who(self)} needs a known last dim, received input shape {input_shape}.")
        add_kernel_bias(self, (in_dim, self.units), self.units)
        self.input_spec = InputSpec(min_ndim=2, axes={-1: in_dim})

    def _input_hint(self, index, shape, spec):
        return flatten_hint(shape, self.kernel.shape[0]) if self.kernel is not None else ""

    def call(self, inputs):
        act = _activation_fn(self.activation)
        if isinstance(inputs, KerasTensor):
            self.__dict__["_ff_recorded_activation"] = act  # what the recorded graph holds (_current_op)
        fused = activations.fusable_name(act)  # ops.dense acts on the last axis of any rank
        y = ops.dense(inputs, self.kernel, self.bias, activation=fused)
        return y if fused is not None else apply_activation(y, act)

    def _current_op(self, op):
        """`op` (recorded by call()) following a later ``layer.activation = ...`` (Grad-CAM sets the
        classifier's to None to read logits): between linear and element-wise activations, and from softmax
        to those, the activation fused into the matmul changes and the softmax node after it becomes an
        identity; so does the sigmoid node after it of TensorFlow's tf.nn.sigmoid, which is not fused
        (keras_alias). A change one node cannot express (to softmax, to or from a custom function) is an
        error."""
        act, recorded = _activation_fn(self.activation), self.__dict__.get("_ff_recorded_activation")
        raw = getattr(recorded, "_keras_name", None)  # tf.nn.softmax / sigmoid, a node after the matmul
        trailing = ("softmax", "activation") if raw == "sigmoid" else ("softmax",)
        if recorded is None or act is recorded or op.type_name not in ("dense", *trailing):
            return op
        simple = activations.fusable_name(act) is not None or act is activations.linear
        if not simple or not (activations.fusable_name(recorded) is not None
                              or recorded in (activations.linear, activations.softmax) or raw is not None):
            raise GraphError(f"Dense '{self.name}': its activation was changed after the model was built, from "
                             f"{getattr(recorded, '__name__', recorded)} to {getattr(act, '__name__', act)}; a built "
                             f"Dense switches between linear and element-wise activations, and from softmax to "
                             f"those. Build the model again with the new activation (or add an Activation layer).")
        if op.type_name in trailing:
            from flexflow_keras.ops.math_ops import UnaryOp

            return UnaryOp("identity")
        want = activations.fusable_name(act) or "linear"
        return op if op.activation == want else dataclasses.replace(op, activation=want, activation_params=())

    def get_config(self):
        return {**super().get_config(), "units": self.units, **kernel_bias_config(self)}


class Activation(Layer):
    """Apply an activation function.

    Args:
        activation: name (``"relu"``, ``"softmax"``, ...) or function.
    """

    _float_math = True
    supports_masking = True

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


class Dropout(Layer):
    """Set a fraction `rate` of inputs to 0 during training and scale the rest by ``1 / (1 - rate)``.

    The training/inference mode comes from the execution at run time (the same graph serves both).

    Args:
        rate: fraction to drop, in [0, 1).
        noise_shape: shape of the binary mask (None entries take the input's size), broadcast over
            the input.
        seed: integer seed of the mask stream (drawn from the framework generator when None).
    """

    _float_math = True
    supports_masking = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = _args.rate(self, "rate", rate)
        if self.rate >= 1.0:
            raise ValueError(f"{_args.who(self)} expects rate in [0, 1), received rate={rate!r}.")
        self.noise_shape = tuple(noise_shape) if noise_shape is not None else None
        self.seed = seed
        self._seed = int(seed) if seed is not None else rng.default_seed(self.rate > 0)

    def call(self, inputs, training=None):
        # `training` only matters for eager calls; a recorded graph follows the execution's mode.
        return ops.dropout(inputs, self.rate, seed=self._seed, noise_shape=self.noise_shape,
                           training=bool(training))

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed}


class Flatten(Layer):
    """Flatten each sample to one dim (channels_first inputs are moved to channels_last first, as Keras).

    Args:
        data_format: ``"channels_last"`` or ``"channels_first"`` (the global default when None).
    """

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        from flexflow_keras import backend

        self.data_format = backend.standardize_data_format(data_format, _args.who(self))
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        rank = len(inputs.shape)
        x = inputs
        if self.data_format == "channels_first" and rank > 2:
            x = ops.transpose(x, (0,) + tuple(range(2, rank)) + (1,))
        rest = x.shape[1:]
        size = math.prod(rest) if all(s is not None for s in rest) else -1
        return ops.reshape(x, (-1, size))

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class Reshape(Layer):
    """Reshape each sample to `target_shape` (one entry may be -1, inferred).

    Args:
        target_shape: tuple of ints, without the batch dim.
    """

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        shape = (target_shape,) if isinstance(target_shape, int) else tuple(target_shape)
        if any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or (s < 1 and s != -1)
               for s in shape) or sum(1 for s in shape if s == -1) > 1:
            raise ValueError(f"{_args.who(self)} expects target_shape to be a tuple of positive integers with "
                             f"at most one -1, received target_shape={target_shape!r}.")
        self.target_shape = tuple(int(s) for s in shape)

    def _resolve(self, in_shape) -> tuple[int, ...]:
        rest = tuple(in_shape[1:])
        if any(s is None for s in rest):
            return self.target_shape
        size = math.prod(rest)
        known = math.prod(s for s in self.target_shape if s != -1)
        if -1 in self.target_shape:
            if known == 0 or size % known:
                raise ShapeError(f"{_args.who(self)} cannot reshape samples of shape {rest} ({size} values) "
                                 f"to {self.target_shape}: {size} is not a multiple of {known}.")
            return tuple(size // known if s == -1 else s for s in self.target_shape)
        if known != size:
            raise ShapeError(f"{_args.who(self)} cannot reshape samples of shape {rest} ({size} values) to "
                             f"{self.target_shape} ({known} values). Use -1 for the dim to infer, e.g. "
                             f"Reshape((-1, {self.target_shape[-1]})).")
        return self.target_shape

    def call(self, inputs):
        return ops.reshape(inputs, (-1,) + self._resolve(inputs.shape))

    def get_config(self):
        return {**super().get_config(), "target_shape": self.target_shape}


class Permute(Layer):
    """Permute the non-batch dims: `dims` is a permutation of ``1..rank-1`` (1-indexed, as Keras).

    Args:
        dims: tuple such as ``(2, 1)``.
    """

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        dims = tuple(dims)
        if sorted(dims) != list(range(1, len(dims) + 1)):
            raise ValueError(f"{_args.who(self)} expects dims to be a permutation of 1..{len(dims)} "
                             f"(the batch dim is 0 and stays first), received dims={dims!r}.")
        self.dims = tuple(int(d) for d in dims)
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def call(self, inputs):
        return ops.transpose(inputs, (0,) + self.dims)

    def get_config(self):
        return {**super().get_config(), "dims": self.dims}


class Embedding(Layer):
    """Map integer ids to rows of a trainable ``(input_dim, output_dim)`` table.

    Args:
        input_dim: vocabulary size (ids are in ``[0, input_dim)``).
        output_dim: embedding size.
        embeddings_initializer: initializer (``"uniform"``: U(-0.05, 0.05)).
        embeddings_regularizer, embeddings_constraint: penalty and projection of the table.
        mask_zero: id 0 is padding: the output carries a (batch, ...) mask (``_keras_mask``) that recurrent
            layers honour.
        input_length: Keras 2's argument, accepted and ignored.
    """

    _accepts_int_inputs = True

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", embeddings_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, weights=None, input_length=None, **kwargs):
        super().__init__(weights=weights, **kwargs)
        self.input_dim = _args.positive_int(self, "input_dim", input_dim)
        self.output_dim = _args.positive_int(self, "output_dim", output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.mask_zero = bool(mask_zero)
        self.input_length = input_length
        self.embeddings = None

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(name="embeddings", shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)

    def _convert_eager(self, inputs):
        arr = np.asarray(inputs)
        if arr.dtype.kind == "f":
            arr = arr.astype(np.int32)
        return arr

    def call(self, inputs):
        x = inputs
        if not str(x.dtype).startswith(("int", "uint")):
            x = ops.cast(x, "int32")
        y = ops.embedding(x, self.embeddings)
        if self.mask_zero and hasattr(y, "node"):  # symbolic: the padding mask travels with the tensor
            y._keras_mask = ops.not_equal(x, 0)
        return y

    def compute_mask(self, inputs, mask=None):
        """Keras 3's: with mask_zero, where the ids are not 0 (an eager call's output carries it too)."""
        if not self.mask_zero:
            return None
        return ops.not_equal(inputs, 0)

    def get_config(self):
        return {**super().get_config(), "input_dim": self.input_dim, "output_dim": self.output_dim,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer": regularizers.serialize(self.embeddings_regularizer),
                "embeddings_constraint": constraints.serialize(self.embeddings_constraint),
                "mask_zero": self.mask_zero}


class Lambda(Layer):
    """Wrap a function of tensors (composed from `flexflow_keras.ops`) as a layer.

    Args:
        function: ``fn(inputs, **arguments)``.
        output_shape: the per-sample output shape (a tuple, or a function of the input shape), checked
            against what `function` computes on symbolic inputs.
        mask: the output's mask (Keras 3): None (no mask), ``fn(inputs, previous_mask)`` returning it, or a
            tensor. A `function` with a ``mask`` parameter receives the input's mask.
        arguments: extra keyword arguments for `function`.
    """

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise ValueError(f"{_args.who(self)} expects a callable, received {function!r}.")
        self.function = function
        self.output_shape_arg = output_shape
        self.mask = mask
        self.arguments = dict(arguments or {})
        try:
            self._fn_takes_mask = "mask" in inspect.signature(function).parameters
        except (TypeError, ValueError):  # a builtin without a signature
            self._fn_takes_mask = False

    def call(self, inputs, mask=None):
        kwargs = dict(self.arguments, **({"mask": mask} if self._fn_takes_mask else {}))
        out = self.function(inputs, **kwargs)
        if self.output_shape_arg is not None and isinstance(out, KerasTensor):
            _check_lambda_shape(self, inputs, out)
        if self.mask is not None and isinstance(out, KerasTensor):
            out_mask = self.mask(inputs, mask) if callable(self.mask) else self.mask
            if out_mask is not None:
                out._keras_mask = out_mask
        return out

    def get_config(self):
        config = {**super().get_config(), "function": getattr(self.function, "__name__", repr(self.function)),
                  "arguments": self.arguments}
        if self.output_shape_arg is not None and not callable(self.output_shape_arg):
            config["output_shape"] = tuple(self.output_shape_arg)
        if callable(self.mask):
            config["mask"] = getattr(self.mask, "__name__", repr(self.mask))
        return config

    @classmethod
    def from_config(cls, config):
        from flexflow_keras.utils.serialization import lookup

        config = dict(config)
        fn = config["function"]
        if isinstance(fn, str):
            resolved = lookup(fn)
            if resolved is None:
                raise ValueError(f"Lambda.from_config: function '{fn}' is not registered; pass "
                                 f"custom_objects={{'{fn}': {fn}}} or register it.")
            config["function"] = resolved
        if isinstance(config.get("mask"), str):
            name, config["mask"] = config["mask"], lookup(config["mask"])
            if config["mask"] is None:
                raise ValueError(f"Lambda.from_config: mask function '{name}' is not registered; pass "
                                 f"custom_objects={{'{name}': {name}}} or register it.")
        return cls(**config)


def _check_lambda_shape(layer, inputs, out) -> None:
    """Raise when a Lambda's declared output_shape disagrees with what its function computed."""
    from flexflow_keras.errors import ShapeError

    want = layer.output_shape_arg
    if callable(want):
        shapes = [tuple(t.shape) for t in inputs] if isinstance(inputs, (list, tuple)) else tuple(inputs.shape)
        want = want(shapes)
    want = tuple(want)
    got = tuple(out.shape)
    if len(want) == len(got) - 1:
        got = got[1:]
    if len(want) != len(got) or any(w is not None and g is not None and w != g for w, g in zip(want, got, strict=True)):
        raise ShapeError(f"Lambda '{layer.name}' declares output_shape={want} but its function returns shape "
                         f"{tuple(out.shape)}; fix output_shape (per sample, without the batch) or the function.")
