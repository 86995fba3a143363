"""`RandomFourierFeatures` (tf.keras 2's `keras.layers.experimental.RandomFourierFeatures`): the random
Fourier feature map of Rahimi & Recht that approximates a shift-invariant kernel, so that a linear model on
top of it (a Dense layer with a hinge loss: the keras-io quasi-SVM recipe) behaves like a kernel machine.

    output = sqrt(2 / output_dim) * cos(x @ (unscaled_kernel / kernel_scale) + bias)

`unscaled_kernel` is drawn once from the kernel's spectral density (standard normal for the Gaussian
kernel, standard Cauchy for the Laplacian kernel) and `bias` from U[0, 2*pi); both stay fixed.
`kernel_scale` (the kernel width, non-negative) is the only trainable weight, and only with
`trainable=True`: as in tf.keras the layer is frozen by default.
"""

from __future__ import annotations

import math

import numpy as np

from flexflow_keras import constraints, initializers, ops
from flexflow_keras.layers.base import Layer

_KERNELS = ("gaussian", "laplacian")


class _StandardCauchy(initializers.RandomInitializer):
    """Samples of the standard Cauchy distribution (the Laplacian kernel's spectral density)."""

    def __call__(self, shape, dtype=None):
        u = self._rng().uniform(0.0, 1.0, tuple(shape))
        return np.tan(np.pi * (u - 0.5)).astype(dtype or "float32")


def _spectral_initializer(kernel: str):
    return initializers.RandomNormal(stddev=1.0) if kernel == "gaussian" else _StandardCauchy()


class RandomFourierFeatures(Layer):
    """Random Fourier features approximating a Gaussian or Laplacian kernel.

    Args:
        output_dim: number of random features (positive integer).
        kernel_initializer: "gaussian" or "laplacian": the kernel the features approximate.
        scale: the kernel width, positive; None gives sqrt(input_dim / 2) for "gaussian" and 1.0 for
            "laplacian" (tf.keras' defaults).
        trainable: whether `kernel_scale` trains (the random kernel and bias never do). Default False.
        name: layer name.
        **kwargs: the usual Layer arguments.
    """

    def __init__(self, output_dim, kernel_initializer="gaussian", scale=None, trainable=False, name=None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        if isinstance(output_dim, bool) or not isinstance(output_dim, (int, np.integer)) or output_dim <= 0:
            raise ValueError(f"RandomFourierFeatures '{self.name}' expects output_dim to be a positive integer, "
                             f"received output_dim={output_dim!r}.")
        if kernel_initializer not in _KERNELS:
            raise ValueError(f"RandomFourierFeatures '{self.name}' expects kernel_initializer to be one of "
                             f"{list(_KERNELS)}, received {kernel_initializer!r}.")
        if scale is not None and not scale > 0.0:
            raise ValueError(f"RandomFourierFeatures '{self.name}' expects scale to be positive (or None), "
                             f"received scale={scale!r}.")
        self.output_dim = int(output_dim)
        self.kernel_initializer = kernel_initializer
        self.scale = scale

    def build(self, input_shape):
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(f"RandomFourierFeatures '{self.name}' needs a known last input dimension, "
                             f"received input shape {tuple(input_shape)}.")
        self.unscaled_kernel = self.add_weight(
            name="unscaled_kernel", shape=(input_dim, self.output_dim),
            initializer=_spectral_initializer(self.kernel_initializer), trainable=False)
        self.bias = self.add_weight(name="bias", shape=(self.output_dim,),
                                    initializer=initializers.RandomUniform(0.0, 2.0 * math.pi), trainable=False)
        scale = self.scale
        if scale is None:
            scale = math.sqrt(input_dim / 2.0) if self.kernel_initializer == "gaussian" else 1.0
        self.kernel_scale = self.add_weight(name="kernel_scale", shape=(1,),
                                            initializer=initializers.Constant(scale), trainable=True,
                                            constraint=constraints.NonNeg())

    def call(self, inputs):
        kernel = ops.divide(self.unscaled_kernel, self.kernel_scale)
        outputs = ops.matmul(inputs, kernel) + self.bias
        return ops.cos(outputs) * math.sqrt(2.0 / self.output_dim)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.output_dim,)

    def get_config(self):
        return {**super().get_config(), "output_dim": self.output_dim,
                "kernel_initializer": self.kernel_initializer, "scale": self.scale}
