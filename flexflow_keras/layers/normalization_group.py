"""GroupNormalization and RMSNormalization (Keras 3.15), composed from ops in `call()`, so their
gradients, data-parallel splits (every op is per sample) and GPU kernels are those of the ops.

GroupNormalization needs each group's mean and variance over the group's channels and every other
per-sample axis. It takes the per-channel means over the non-channel axes, then averages them within each
group with one small matmul by a constant (C, C) block matrix (every channel of a group holds as many
elements, so the mean of the channel means is the group mean); the variance is the same of the squared
deviations (two passes, as Keras' `moments`). No reshape splits the channel axis, so per-sample dims may be
unknown (sequences and images of any size).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras import ops
from flexflow_keras.errors import ArgumentError, ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.layers.normalization import affine_arguments, affine_config


def _one_input(layer, input_shape) -> None:
    if input_shape and isinstance(input_shape[0], list | tuple):
        raise ArgumentError(f"{_args.who(layer)} takes one tensor, received {len(input_shape)} (shapes "
                         f"{[tuple(s) for s in input_shape]}); call it on each tensor separately.")


class GroupNormalization(Layer):
    """Normalise each sample over groups of channels (Wu & He, 2018): ``groups`` groups along `axis`, each to
    zero mean and unit variance over its channels and all other non-batch axes, then ``* gamma + beta``.

    Args:
        groups: the number of groups (a divisor of the channel count), or -1 for one per channel (instance
            normalisation). Keras' default 32.
        axis: the channel axis (-1, or 1 for channels_first).
        epsilon: added to the variance (1e-3).
        center, scale: learn beta / gamma.
        beta_initializer, gamma_initializer, beta_regularizer, gamma_regularizer, beta_constraint,
        gamma_constraint: as for Dense.

    Weights, as Keras': gamma (if scale), then beta (if center), each of shape (channels,). A mask passes
    through unchanged and does not restrict the statistics (Keras 3.15's `call` takes none).

    Example:
        >>> y = GroupNormalization(groups=4)(Input((16, 16, 32)))
    """

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        if isinstance(groups, bool) or not isinstance(groups, int | np.integer) or (groups <= 0 and groups != -1):
            raise ArgumentError(f"GroupNormalization expects a positive integer for groups (or -1 for instance "
                             f"normalization), received groups={groups!r}.")
        super().__init__(**kwargs)
        if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
            raise ArgumentError(f"{_args.who(self)} expects an integer channel axis, received axis={axis!r}.")
        self.groups, self.axis = int(groups), int(axis)
        affine_arguments(self, epsilon, center, scale, beta_initializer, gamma_initializer, beta_regularizer,
                         gamma_regularizer, beta_constraint, gamma_constraint)

    def build(self, input_shape):
        _one_input(self, input_shape)
        axis = _args.axis(self, self.axis, len(input_shape))
        dim = input_shape[axis]
        if dim is None:
            raise ShapeError(f"{_args.who(self)} needs a known size on the channel axis {self.axis}, received input "
                             f"shape {tuple(input_shape)}.")
        if self.groups == -1:
            self.groups = dim
        if dim < self.groups or dim % self.groups:
            raise ArgumentError(f"{_args.who(self)}: groups={self.groups} must divide the {dim} channels of axis "
                             f"{self.axis} (input shape {tuple(input_shape)}); pick a divisor of {dim}, or -1.")
        self.input_spec = InputSpec(ndim=len(input_shape), axes={axis: dim})
        if self.scale:
            self.gamma = self.add_weight(name="gamma", shape=(dim,), initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer, constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight(name="beta", shape=(dim,), initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer, constraint=self.beta_constraint)

    def _group_mean(self, stats, axis: int, nd: int):
        """The mean over each group's channels of per-channel `stats` (1 on every axis but batch and
        `axis`), broadcast back to the channels."""
        dim = stats.shape[axis]
        size = dim // self.groups
        block = np.kron(np.eye(self.groups), np.full((size, size), 1.0 / size)).astype(stats.dtype)
        if self.groups == dim:  # one channel per group: the channel statistic is the group's
            return stats
        if axis == nd - 1:
            return ops.matmul(stats, block)
        perm = [d for d in range(nd) if d != axis] + [axis]
        back = [perm.index(d) for d in range(nd)]
        return ops.transpose(ops.matmul(ops.transpose(stats, perm), block), back)

    def call(self, inputs):
        nd = len(inputs.shape)
        axis = _args.axis(self, self.axis, nd)
        x = inputs if str(inputs.dtype) in ("float32", "float64") else ops.cast(inputs, "float32")
        reduce = tuple(d for d in range(1, nd) if d != axis)

        def channel_mean(t):
            return ops.mean(t, axis=reduce, keepdims=True) if reduce else t

        mean = self._group_mean(channel_mean(x), axis, nd)
        centred = ops.subtract(x, mean)
        variance = self._group_mean(channel_mean(ops.square(centred)), axis, nd)
        inv = ops.rsqrt(ops.add(variance, self.epsilon))
        shape = [1] * nd
        shape[axis] = inputs.shape[axis]
        if self.scale:
            inv = ops.multiply(inv, self._param(self.gamma, shape, nd, axis, x))
        out = ops.multiply(centred, inv)
        if self.center:
            out = ops.add(out, self._param(self.beta, shape, nd, axis, x))
        return out if str(out.dtype) == self._dtype else ops.cast(out, self._dtype)

    @staticmethod
    def _param(weight, shape, nd: int, axis: int, x):
        """gamma / beta broadcast along the channel axis (a (C,) weight broadcasts as it is on the last one)."""
        w = weight if str(weight.dtype) == str(x.dtype) else ops.cast(weight, str(x.dtype))
        return w if axis == nd - 1 else ops.reshape(w, shape)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "groups": self.groups, "axis": self.axis, **affine_config(self)}


class RMSNormalization(Layer):
    """Root-mean-square normalisation (Zhang & Sennrich, 2019): ``x * rsqrt(mean(x^2, axis) + epsilon) *
    scale``, with no centring (`keras.ops.rms_normalization`).

    Args:
        axis: the axis (or list of axes) to normalise over (default -1).
        epsilon: added to the mean square (Keras' default 1e-6).

    Weights, as Keras': `scale` (trainable, ones), of the normalised axes' shape, multiplied as Keras does
    (NumPy broadcasting, so with the last axes: axis=-2 works for square trailing dims only, as in Keras). As
    in Keras, a mask is not passed on.

    Example:
        >>> y = RMSNormalization()(Input((10, 64)))
    """

    _float_math = True

    def __init__(self, axis=-1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        axes = list(axis) if isinstance(axis, list | tuple) else [axis]
        if not axes or any(isinstance(a, bool) or not isinstance(a, int | np.integer) for a in axes):
            raise ArgumentError(f"{_args.who(self)} expects an int or a list of ints for axis, received "
                             f"axis={axis!r}.")
        self.axis = int(axis) if isinstance(axis, int | np.integer) else [int(a) for a in axis]
        self.epsilon = float(epsilon)
        self.scale = None

    def _axes(self, nd: int) -> list[int]:
        axes = [self.axis] if isinstance(self.axis, int) else self.axis
        return sorted(_args.axis(self, a, nd) for a in axes)

    def build(self, input_shape):
        _one_input(self, input_shape)
        axes = self._axes(len(input_shape))
        shape = tuple(input_shape[a] for a in axes)
        if any(s is None for s in shape):
            raise ShapeError(f"{_args.who(self)} needs known sizes on axes {axes}, received input shape "
                             f"{tuple(input_shape)}.")
        self.scale = self.add_weight(name="scale", shape=shape, initializer="ones")

    def call(self, inputs):
        return ops.rms_normalization(inputs, scale=self.scale, axis=self._axes(len(inputs.shape)),
                                     epsilon=self.epsilon)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon}
