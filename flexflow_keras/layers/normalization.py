"""BatchNormalization and LayerNormalization.

BatchNormalization normalises with the statistics of the whole (global) batch in training and with the
moving averages in inference; which one is the execution's KernelContext's `training`, at run time. A
frozen layer (``trainable=False``) always uses the moving averages, as in Keras; when `trainable`
changes after the graph was recorded, `Model._op_graph` returns a graph with the updated op.
Its moving averages are non-trainable weights updated once per training step by the op's
`update_state` (``moving = moving * momentum + batch_stat * (1 - momentum)``, Keras' rule).
"""

from __future__ import annotations

import dataclasses

from flexflow_keras import constraints, initializers, ops, regularizers
from flexflow_keras.errors import ArgumentError, ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.ops.graph import KerasTensor


class BatchNormalization(Layer):
    """Normalise each channel (along `axis`) to zero mean and unit variance, then scale and shift.

    Args:
        axis: the channel axis (-1 for channels_last images and for dense features, 1 for channels_first).
        momentum: of the moving averages (Keras default 0.99).
        epsilon: added to the variance (Keras default 1e-3).
        center: learn a shift `beta`.
        scale: learn a scale `gamma`.
        beta_initializer, gamma_initializer, moving_mean_initializer, moving_variance_initializer:
            initializers of the four weights.
        beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint: as for Dense.

    Weights, in Keras' order: gamma (if scale), beta (if center), moving_mean, moving_variance.
    A mask (Keras 3: from Embedding(mask_zero=True), Masking, or ``mask=``) restricts the training batch
    statistics to the unmasked positions and is passed on.
    """

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", moving_mean_initializer="zeros",
                 moving_variance_initializer="ones", beta_regularizer=None, gamma_regularizer=None,
                 beta_constraint=None, gamma_constraint=None, synchronized=False, renorm=False,
                 fused=None, **kwargs):
        super().__init__(**kwargs)
        if renorm:
            raise ValueError(f"{_args.who(self)}: renorm=True is not supported.")
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise ValueError(f"{_args.who(self)} normalises over one channel axis, received axis={axis!r}.")
            axis = axis[0]
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise ValueError(f"{_args.who(self)} expects an integer axis, received axis={axis!r}.")
        self.axis = axis
        self.momentum = float(momentum)
        if not 0.0 <= self.momentum <= 1.0:
            raise ValueError(f"{_args.who(self)} expects momentum in [0, 1], received momentum={momentum!r}.")
        self.epsilon = float(epsilon)
        if not self.epsilon > 0:
            raise ValueError(f"{_args.who(self)} expects a positive epsilon, received epsilon={epsilon!r}.")
        self.center, self.scale = bool(center), bool(scale)
        self.synchronized = bool(synchronized)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape):
        ndim = len(input_shape)
        axis = _args.axis(self, self.axis, ndim)
        channels = input_shape[axis]
        if channels is None:
            raise ShapeError(f"{_args.who(self)} needs a known size on axis {self.axis}, received input "
                             f"shape {input_shape}.")
        shape = (channels,)
        if self.scale:
            self.gamma = self.add_weight(name="gamma", shape=shape, initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer, constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight(name="beta", shape=shape, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer, constraint=self.beta_constraint)
        self.moving_mean = self.add_weight(name="moving_mean", shape=shape,
                                           initializer=self.moving_mean_initializer, trainable=False)
        self.moving_variance = self.add_weight(name="moving_variance", shape=shape,
                                               initializer=self.moving_variance_initializer, trainable=False)
        self.input_spec = InputSpec(ndim=ndim, axes={axis: channels})

    def _op_training(self, symbolic: bool, training) -> bool | None:
        """The op's mode: a frozen layer always uses its moving statistics (Keras); otherwise a recorded
        graph follows the execution's mode (None) and an eager call the given `training`."""
        if not self.trainable:
            return False
        return None if symbolic else bool(training)

    def call(self, inputs, training=None, mask=None):
        axis = _args.axis(self, self.axis, len(inputs.shape))
        symbolic = isinstance(inputs, KerasTensor)
        if mask is not None:
            if len(mask.shape) != len(inputs.shape) - 1 or axis != len(inputs.shape) - 1:
                raise ValueError(f"{_args.who(self)}: a mask needs the channels on the last axis and one dim "
                                 f"less than the inputs (Keras 3); received inputs of shape {tuple(inputs.shape)}, "
                                 f"axis={self.axis} and a mask of shape {tuple(mask.shape)}.")
        return ops.batch_norm(inputs, self.gamma, self.beta, self.moving_mean, self.moving_variance,
                              axis=axis, momentum=self.momentum, epsilon=self.epsilon,
                              training=self._op_training(symbolic, training), mask=mask)

    def _current_op(self, op):
        """`op` (recorded by this layer) updated to the layer's current `trainable` (see Model._op_graph)."""
        want = self._op_training(True, None)
        if getattr(op, "type_name", "") == "batch_norm" and op.training != want:
            return dataclasses.replace(op, training=want)
        return op

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
                "moving_variance_initializer": initializers.serialize(self.moving_variance_initializer),
                "beta_regularizer": regularizers.serialize(self.beta_regularizer),
                "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
                "beta_constraint": constraints.serialize(self.beta_constraint),
                "gamma_constraint": constraints.serialize(self.gamma_constraint),
                "synchronized": self.synchronized}


class LayerNormalization(Layer):
    """Normalise each sample over `axis` (the last dims), then scale by `gamma` and shift by `beta`.

    Args:
        axis: an int or a list of trailing axes (default -1).
        epsilon: added to the variance (Keras default 1e-3).
        center: learn `beta`.
        scale: learn `gamma`.
        beta_initializer, gamma_initializer, beta_regularizer, gamma_regularizer, beta_constraint,
        gamma_constraint: as for Dense.

    Weights: gamma (if scale), then beta (if center), each of the normalised dims' shape.
    """

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, rms_scaling=False,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        if rms_scaling:
            raise ValueError(f"{_args.who(self)}: rms_scaling=True is not supported.")
        axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        if not axes or any(isinstance(a, bool) or not isinstance(a, int) for a in axes):
            raise ValueError(f"{_args.who(self)} expects an int or a list of ints for axis, received "
                             f"axis={axis!r}.")
        self.axis = axis if isinstance(axis, int) else list(axis)
        affine_arguments(self, epsilon, center, scale, beta_initializer, gamma_initializer, beta_regularizer,
                         gamma_regularizer, beta_constraint, gamma_constraint)

    def _axes(self, ndim: int) -> tuple[int, ...]:
        axes = sorted(_args.axis(self, a, ndim) for a in ([self.axis] if isinstance(self.axis, int) else self.axis))
        if axes != list(range(ndim - len(axes), ndim)):
            raise ValueError(f"{_args.who(self)} normalises over trailing axes only; received axis={self.axis!r} "
                             f"for inputs of rank {ndim}.")
        return tuple(axes)

    def build(self, input_shape):
        axes = self._axes(len(input_shape))
        shape = tuple(input_shape[a] for a in axes)
        if any(s is None for s in shape):
            raise ShapeError(f"{_args.who(self)} needs known sizes on axes {axes}, received {input_shape}.")
        if self.scale:
            self.gamma = self.add_weight(name="gamma", shape=shape, initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer, constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight(name="beta", shape=shape, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer, constraint=self.beta_constraint)
        self.input_spec = InputSpec(ndim=len(input_shape), axes={a: input_shape[a] for a in axes})

    def call(self, inputs):
        axes = self._axes(len(inputs.shape))
        return ops.layer_norm(inputs, self.gamma, self.beta, axis=axes, epsilon=self.epsilon)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, **affine_config(self)}


def affine_arguments(layer, epsilon, center, scale, beta_initializer, gamma_initializer, beta_regularizer,
                     gamma_regularizer, beta_constraint, gamma_constraint) -> None:
    """Check and store what the normalisation layers with a learnt shift and scale share (Layer- and
    GroupNormalization): epsilon, center/scale and beta's and gamma's initializers, regularizers, constraints."""
    layer.epsilon = float(epsilon)
    if not layer.epsilon > 0:
        raise ArgumentError(f"{_args.who(layer)} expects a positive epsilon, received epsilon={epsilon!r}.")
    layer.center, layer.scale = bool(center), bool(scale)
    layer.beta_initializer = initializers.get(beta_initializer)
    layer.gamma_initializer = initializers.get(gamma_initializer)
    layer.beta_regularizer = regularizers.get(beta_regularizer)
    layer.gamma_regularizer = regularizers.get(gamma_regularizer)
    layer.beta_constraint = constraints.get(beta_constraint)
    layer.gamma_constraint = constraints.get(gamma_constraint)
    layer.gamma = layer.beta = None


def affine_config(layer) -> dict:
    """`affine_arguments`' part of a layer's config, as Keras writes it."""
    return {"epsilon": layer.epsilon, "center": layer.center, "scale": layer.scale,
            "beta_initializer": initializers.serialize(layer.beta_initializer),
            "gamma_initializer": initializers.serialize(layer.gamma_initializer),
            "beta_regularizer": regularizers.serialize(layer.beta_regularizer),
            "gamma_regularizer": regularizers.serialize(layer.gamma_regularizer),
            "beta_constraint": constraints.serialize(layer.beta_constraint),
            "gamma_constraint": constraints.serialize(layer.gamma_constraint)}
