"""Regularization layers beyond Dropout: SpatialDropout1D/2D/3D, GaussianNoise, GaussianDropout,
AlphaDropout and ActivityRegularization (Keras 3 semantics; `keras.layers.noise` holds the noise ones in
Keras 2).

The noise layers act in training only; as Dropout, the recorded graph follows the execution's mode at
run time, and an eager call takes its ``training`` argument. Their noise is seeded like Dropout's: the
layer's `seed` (or one drawn from the framework generator) with the step and the run's seed.
"""

from __future__ import annotations

import dataclasses
import math

from flexflow_keras import backend
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.core import Dropout
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.ops import functional as F
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.noise import ActivityRegularizationOp, AlphaDropoutOp, GaussianNoiseOp
from flexflow_keras.utils import rng


def _apply_noise(op, inputs, training):
    sym = F._symbolic(inputs)
    if sym and F._forces_training(training):  # training=True given: the noise applies in inference too
        op = dataclasses.replace(op, always=True)
    return apply_op(op, [F._tensor(inputs, sym)], training=False if sym else F._eager_training(training))


class _SpatialDropout(Dropout):
    """Dropout of whole feature maps: the mask is one bit per (sample, channel)."""

    _rank = 1

    def __init__(self, rate, seed=None, name=None, dtype=None, **kwargs):
        if "noise_shape" in kwargs:
            raise ValueError(f"{type(self).__name__} sets its own noise shape (one bit per sample and channel); "
                             f"remove noise_shape, or use Dropout(rate, noise_shape=...).")
        super().__init__(rate, seed=seed, name=name, dtype=dtype, **kwargs)
        self.input_spec = InputSpec(ndim=self._rank + 2)
        self.noise_shape = self._noise_shape()

    def _noise_shape(self) -> tuple:
        return (None,) + (1,) * self._rank + (None,)

    def get_config(self):
        config = super().get_config()
        config.pop("noise_shape", None)
        config.pop("trainable", None)  # Keras 3's SpatialDropout config has none (nor takes one)
        return config


class SpatialDropout1D(_SpatialDropout):
    """Drop whole channels of (batch, steps, channels) inputs in training.

    Args:
        rate: fraction of channels to drop, in [0, 1).
        seed: integer seed of the mask (drawn from the framework generator when None).
    """

    _rank = 1


class _SpatialDropoutND(_SpatialDropout):
    def __init__(self, rate, data_format=None, seed=None, name=None, dtype=None, **kwargs):
        self.data_format = backend.standardize_data_format(data_format, type(self).__name__)
        super().__init__(rate, seed=seed, name=name, dtype=dtype, **kwargs)

    def _noise_shape(self) -> tuple:
        if self.data_format == "channels_first":
            return (None, None) + (1,) * self._rank
        return (None,) + (1,) * self._rank + (None,)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class SpatialDropout2D(_SpatialDropoutND):
    """Drop whole feature maps of 4-D image inputs in training.

    Args:
        rate: fraction of channels to drop, in [0, 1).
        data_format: ``"channels_last"`` or ``"channels_first"`` (the global default when None).
        seed: integer seed of the mask.
    """

    _rank = 2


class SpatialDropout3D(_SpatialDropoutND):
    """Drop whole feature volumes of 5-D inputs in training (arguments as SpatialDropout2D)."""

    _rank = 3


class GaussianNoise(Layer):
    """Add zero-centred Gaussian noise of standard deviation `stddev` in training.

    Args:
        stddev: the noise's standard deviation (>= 0).
        seed: integer seed of the noise (drawn from the framework generator when None).
    """

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        try:
            self.stddev = float(stddev)
        except (TypeError, ValueError):
            self.stddev = -1.0
        if isinstance(stddev, bool) or not self.stddev >= 0:
            raise ValueError(f"{_args.who(self)} expects stddev to be a non-negative number, received "
                             f"stddev={stddev!r}.")
        self.seed = seed
        self._seed = int(seed) if seed is not None else rng.default_seed(self.stddev > 0)

    def call(self, inputs, training=None):
        return _apply_noise(GaussianNoiseOp(self.stddev, self._seed, False), inputs, training)

    def get_config(self):
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(Layer):
    """Multiply inputs by Gaussian noise of mean 1 and standard deviation ``sqrt(rate / (1 - rate))`` in
    training.

    Args:
        rate: the drop probability it mimics, in [0, 1).
        seed: integer seed of the noise.
    """

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = _args.rate(self, "rate", rate)
        if self.rate >= 1.0:
            raise ValueError(f"{_args.who(self)} expects rate in [0, 1), received rate={rate!r}.")
        self.seed = seed
        self._seed = int(seed) if seed is not None else rng.default_seed(self.rate > 0)

    def call(self, inputs, training=None):
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        return _apply_noise(GaussianNoiseOp(stddev, self._seed, True), inputs, training)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class AlphaDropout(Layer):
    """Dropout that keeps SELU's self-normalising mean and variance (use with ``activation="selu"``):
    dropped values are set to SELU's negative saturation, then an affine map restores the statistics.

    Args:
        rate: fraction to drop, in [0, 1).
        noise_shape: shape of the mask (None entries take the input's size), broadcast over the input.
        seed: integer seed of the mask.
    """

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = _args.rate(self, "rate", rate)
        if self.rate >= 1.0:
            raise ValueError(f"{_args.who(self)} expects rate in [0, 1), received rate={rate!r}.")
        self.noise_shape = tuple(noise_shape) if noise_shape is not None else None
        self.seed = seed
        self._seed = int(seed) if seed is not None else rng.default_seed(self.rate > 0)

    def call(self, inputs, training=None):
        ns = None if self.noise_shape is None else tuple(None if s is None else int(s) for s in self.noise_shape)
        return _apply_noise(AlphaDropoutOp(self.rate, self._seed, ns), inputs, training)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed}


class ActivityRegularization(Layer):
    """The identity, adding ``(l1 * sum|x| + l2 * sum x^2) / batch_size`` to the training loss (Keras 3
    divides the activity penalty by the batch size).

    The penalty's gradient comes from the op's backward (ActivityRegularizationOp); its value joins the
    model's losses as an `add_loss` term without a gradient of its own, so the loss that `fit` and
    `evaluate` report includes it, as Keras 3's does.

    Args:
        l1, l2: the penalty factors (>= 0).
    """

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(**kwargs)
        for arg, value in (("l1", l1), ("l2", l2)):
            try:
                ok = float(value) >= 0 and not isinstance(value, bool)
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise ValueError(f"{_args.who(self)} expects {arg} to be a non-negative number, received "
                                 f"{arg}={value!r}.")
        self.l1, self.l2 = float(l1), float(l2)

    def call(self, inputs):
        x = F._tensor(inputs, F._symbolic(inputs))
        rows = int(getattr(x, "batch_scale", 1) or 1)  # Keras divides by ops.shape(x)[0]: a folded tensor's rows
        out = apply_op(ActivityRegularizationOp(self.l1, self.l2, rows), [x])
        if self.l1 or self.l2:  # the value the logs add (the op's backward gives the gradient)
            self.add_loss(F.stop_gradient(self._penalty(x)))
        return out

    def _penalty(self, x):
        from flexflow_keras import ops

        total = 0.0
        if self.l1:
            total = ops.multiply(ops.sum(ops.abs(x)), self.l1)
        if self.l2:
            total = ops.add(total, ops.multiply(ops.sum(ops.square(x)), self.l2))
        return ops.divide(total, ops.cast(ops.shape(x)[0], "float32"))

    def get_config(self):
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}
