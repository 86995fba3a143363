"""`STFTSpectrogram`: Keras 3's spectrogram layer, a short-time Fourier transform computed as two strided 1-D
convolutions with windowed DFT kernels (`initializers.STFT`), so that the kernels may train.

Each input channel is convolved on its own (with a kernel reading only it, not a fold of the channels into the
batch, so an open time length works); the
intermediate layout is Keras' ``(batch, channels, freq, frames)``, and the modes, epsilons and output
layouts are Keras 3.15's.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from flexflow_keras import backend, initializers, ops
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.input_spec import InputSpec

MODES = ("log", "magnitude", "psd", "real", "imag", "angle", "stft")


class STFTSpectrogram(Layer):
    """The spectrogram of a batch of signals ``(batch, time, channels)`` (channels_last).

    Args:
        mode: ``"log"`` (log magnitude), ``"magnitude"``, ``"psd"`` (power spectral density), ``"real"``,
            ``"imag"``, ``"angle"`` or ``"stft"`` (real and imaginary parts along the frequency axis).
        frame_length: samples per frame (the window's length).
        frame_step: samples between frames (default ``frame_length // 2``).
        fft_length: DFT size (default the next power of two of `frame_length`); ``fft_length // 2 + 1``
            frequency bins.
        window: a `scipy.signal.get_window` name, the window's values, or None.
        periodic: a periodic named window. scaling: ``"density"``, ``"spectrum"`` or None.
        padding: ``"valid"`` or ``"same"`` (the convolution's).
        expand_dims: give ``(batch, frames, freq, channels)`` instead of ``(batch, frames, channels * freq)``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """

    def __init__(self, mode="log", frame_length=256, frame_step=None, fft_length=None, window="hann",
                 periodic=False, scaling="density", padding="valid", expand_dims=False, data_format=None,
                 **kwargs):
        who = f"STFTSpectrogram({kwargs.get('name', '')!s})"
        if not isinstance(frame_length, int) or isinstance(frame_length, bool) or frame_length <= 0:
            raise ValueError(f"{who} expects frame_length to be a positive integer, received "
                             f"frame_length={frame_length!r}.")
        if frame_step is not None and (not isinstance(frame_step, int) or not 0 < frame_step <= frame_length):
            raise ValueError(f"{who} expects frame_step to be a positive integer not greater than frame_length "
                             f"({frame_length}), received frame_step={frame_step!r}.")
        if fft_length is not None and fft_length < frame_length:
            raise ValueError(f"{who} expects fft_length to be at least frame_length ({frame_length}), received "
                             f"fft_length={fft_length!r}.")
        if fft_length is not None and (fft_length & -fft_length) != fft_length:
            warnings.warn(f"`fft_length` is recommended to be a power of two. Received fft_length={fft_length}",
                          stacklevel=2)
        if mode not in MODES:
            raise ValueError(f"{who} expects mode to be one of {', '.join(MODES)}, received mode={mode!r}.")
        if scaling is not None and scaling not in ("density", "spectrum"):
            raise ValueError(f"{who} expects scaling None, 'density' or 'spectrum', received scaling={scaling!r}.")
        if padding not in ("valid", "same"):
            raise ValueError(f"{who} expects padding 'valid' or 'same', received padding={padding!r}.")
        initializers.STFT("real", window, scaling, periodic)  # an unknown window name fails here
        super().__init__(**kwargs)
        self.mode, self.frame_length, self.frame_step, self.fft_length = mode, frame_length, frame_step, fft_length
        self._frame_step = frame_step or frame_length // 2
        self._fft_length = fft_length or 2 ** int(math.ceil(math.log2(frame_length)))
        self.window, self.periodic, self.scaling, self.padding = window, periodic, scaling, padding
        self.expand_dims = expand_dims
        self.data_format = backend.standardize_data_format(data_format)
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        shape = (self.frame_length, 1, self._fft_length // 2 + 1)
        if self.mode != "imag":
            self.real_kernel = self.add_weight(name="real_kernel", shape=shape, initializer=initializers.STFT(
                "real", self.window, self.scaling, self.periodic))
        if self.mode != "real":
            self.imag_kernel = self.add_weight(name="imag_kernel", shape=shape, initializer=initializers.STFT(
                "imag", self.window, self.scaling, self.periodic))
        self.built = True

    def _apply_conv(self, inputs, kernel):
        """``(batch, channels, freq, frames)``: each channel convolved with `kernel` on its own (a kernel
        that reads only that channel, so an open time length needs no slicing or folding)."""
        x = inputs if self.data_format == "channels_last" else ops.transpose(inputs, (0, 2, 1))
        channels = x.shape[-1]
        kernel = ops.cast(kernel, x.dtype)
        kernels = [kernel] if channels == 1 else [
            ops.multiply(kernel, np.eye(channels, dtype=np.dtype(str(x.dtype)))[c].reshape(1, channels, 1))
            for c in range(channels)]
        outs = [ops.transpose(ops.conv(x, k, strides=self._frame_step, padding=self.padding,
                                       data_format="channels_last"), (0, 2, 1)) for k in kernels]
        return ops.stack(outs, axis=1) if len(outs) > 1 else ops.expand_dims(outs[0], 1)

    def _adjust_shapes(self, outputs):
        channels, freq = outputs.shape[1], outputs.shape[2]
        batch = ops.shape(outputs)[0]
        if self.data_format == "channels_last":
            if self.expand_dims:
                return ops.transpose(outputs, (0, 3, 2, 1))
            return ops.reshape(ops.transpose(outputs, (0, 3, 1, 2)), (batch, -1, channels * freq))
        if self.expand_dims:
            return ops.transpose(outputs, (0, 1, 3, 2))
        return ops.reshape(outputs, (batch, channels * freq, -1))

    def call(self, inputs):
        if not hasattr(inputs, "dtype"):
            raise TypeError(f"{_args.who(self)} expects one signal tensor (batch, time, channels), received "
                            f"{type(inputs).__name__}; call it on a single tensor.")
        dtype = np.dtype(str(inputs.dtype)).name
        if dtype not in ("float16", "float32", "float64"):
            raise TypeError(f"{_args.who(self)} expects a float16, float32 or float64 signal, received dtype "
                            f"{dtype}; cast it first (e.g. keras.ops.cast(x, 'float32')).")
        real = self._apply_conv(inputs, self.real_kernel) if self.mode != "imag" else None
        imag = self._apply_conv(inputs, self.imag_kernel) if self.mode != "real" else None
        if self.mode == "real":
            return self._adjust_shapes(real)
        if self.mode == "imag":
            return self._adjust_shapes(imag)
        if self.mode == "angle":
            return self._adjust_shapes(ops.arctan2(imag, real))
        if self.mode == "stft":
            return self._adjust_shapes(ops.concatenate([real, imag], axis=2))
        power = ops.add(ops.square(real), ops.square(imag))
        if self.mode == "psd":  # every bin but the first and last counted twice (the spectrum's other half)
            return self._adjust_shapes(ops.add(power, ops.pad(power[:, :, 1:-1, :],
                                                              [[0, 0], [0, 0], [1, 1], [0, 0]])))
        linear = self._adjust_shapes(ops.sqrt(ops.maximum(power, backend.epsilon())))
        if self.mode == "magnitude":
            return linear
        return ops.log(ops.maximum(linear, backend.epsilon()))

    def compute_output_shape(self, input_shape):
        batch = input_shape[0]
        if self.data_format == "channels_last":
            time, channels = input_shape[1], input_shape[2]
        else:
            channels, time = input_shape[1], input_shape[2]
        freq = (self._fft_length // 2 + 1) * (2 if self.mode == "stft" else 1)
        if time is None:
            frames = None
        elif self.padding == "same":
            frames = -(-time // self._frame_step)
        else:
            frames = (time - self.frame_length) // self._frame_step + 1
        if self.expand_dims:
            return (batch, frames, freq, channels) if self.data_format == "channels_last" else (
                batch, channels, frames, freq)
        return (batch, frames, freq * channels) if self.data_format == "channels_last" else (
            batch, freq * channels, frames)

    def get_config(self):
        return {**super().get_config(), "mode": self.mode, "frame_length": self.frame_length,
                "frame_step": self.frame_step, "fft_length": self.fft_length, "window": self.window,
                "periodic": self.periodic, "scaling": self.scaling, "padding": self.padding,
                "data_format": self.data_format, "expand_dims": self.expand_dims}
