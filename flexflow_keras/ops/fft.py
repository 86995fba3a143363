"""Keras 3's Fourier transforms on (real, imag) pairs: `fft`, `fft2`, `ifft2`, `rfft`, `irfft`, `stft` and
`istft`, with its signatures, checks and dtypes (as its TensorFlow backend: float32 or float64 parts; `rfft`
of a NumPy array gives float32, as tf.signal.rfft converts it).

Two ways to the same numbers. On arrays, with no GradientTape recording, NumPy's FFT runs in float64 and is
cast back (any size, fast). On a model's symbolic tensors, or while a tape records, each transform is
composed from differentiable ops: products with DFT matrices built on the host in float64 and cast to the
input's dtype (`fft`, `fft2`, `ifft2`, `rfft`, `irfft`), a strided 1-D convolution whose kernel is the
windowed DFT (`stft`: framing, window and transform in one op), and an overlap-add of shifted frames
(`istft`). Their cost grows with the square of the transform length, so they suit the short transforms a
layer applies (spectral features, FNet-style mixing, STFT front ends of a few hundred bins).

Example:
    >>> real, imag = keras.ops.fft((np.array([1.0, 2.0], "float32"), np.array([0.0, 1.0], "float32")))
    >>> real.tolist(), imag.tolist()
    ([3.0, -1.0], [1.0, -1.0])
"""

from __future__ import annotations

import functools

import numpy as np

from flexflow_keras.ops import functional as F
from flexflow_keras.ops import numpy_api as N
from flexflow_keras.ops.dtype_rules import dtype_of
from flexflow_keras.ops.graph import KerasTensor, Variable

__all__ = ["fft", "fft2", "ifft2", "rfft", "irfft", "stft", "istft"]

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _graph(*values) -> bool:
    """Compose from ops (symbolic, or a recording tape) rather than run NumPy's FFT."""
    from flexflow_keras.ops import tape

    return F._symbolic(*values) or tape.recording()


def _host(x) -> np.ndarray:
    return np.asarray(x.value if isinstance(x, Variable) else x)


def _shape(x) -> tuple:
    return tuple(x.shape) if isinstance(x, KerasTensor | Variable) else np.shape(x)


def _pair(x) -> tuple:
    """(real, imag) checked as Keras checks them: a pair, one shape, float parts of one dtype."""
    if not isinstance(x, tuple | list) or len(x) != 2:
        raise ValueError(f"Input `x` should be a tuple of two tensors - real and imaginary.Received: x={x}")
    real, imag = x
    if not isinstance(real, KerasTensor | Variable | np.ndarray):
        real = np.asarray(real, dtype_of(real))
    if not isinstance(imag, KerasTensor | Variable | np.ndarray):
        imag = np.asarray(imag, dtype_of(imag))
    if _shape(real) != _shape(imag):
        raise ValueError(f"Input `x` should be a tuple of two tensors - real and imaginary.Both the real and imaginary "
                         f"parts should have the same shape. Received: x[0].shape = {_shape(real)}, x[1].shape = "
                         f"{_shape(imag)}")
    dr, di = dtype_of(real), dtype_of(imag)
    if dr not in _FLOATS or di not in _FLOATS:
        raise ValueError(f"At least one tensor in input `x` is not of type float.Received: x={x}.")
    if dr != di or dr not in ("float32", "float64"):
        raise TypeError(f"The `real` and `imag` components have incorrect types: {dr} {di}. They must be consistent, "
                        f"and one of [tf.float32, tf.float64]")
    return real, imag, dr


def _rank(shape, n: int, op: str) -> None:
    if len(shape) < n:
        from flexflow_keras.tf_convert import invalid

        invalid(f"Input must have rank of at least {n} but got: {list(shape)} [Op:{op}]. keras.ops.{op.lower()} "
                f"transforms the last {n} axes.")


def _static(shape, axes, who: str) -> None:
    if any(shape[a] is None for a in axes):
        raise ValueError(f"keras.ops.{who}: Input should have its transformed axes fully-defined. Received: "
                         f"input.shape = {shape}")


@functools.lru_cache(maxsize=64)
def _dft(n_in: int, n: int, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin) of ``2 pi t k / n`` for t < n_in rows (inputs past n are cropped, missing ones zero) and
    k < bins columns, in float64."""
    t = np.arange(min(n_in, n))[:, None]
    k = np.arange(bins)[None, :]
    angle = 2.0 * np.pi * ((t * k) % n) / n
    c, s = np.zeros((n_in, bins)), np.zeros((n_in, bins))
    c[: len(t)], s[: len(t)] = np.cos(angle), np.sin(angle)
    return c, s


def _mm(x, m: np.ndarray, dtype: str):
    return F.matmul(x, m.astype(dtype))


def _complex_matmul(real, imag, n: int, dtype: str, inverse: bool):
    """(real + i imag) times the DFT matrix of length n along the last axis (the inverse one, 1/n scaled)."""
    c, s = _dft(n, n, n)
    if inverse:
        c, s = c / n, -s / n
    out_r = F.add(_mm(real, c, dtype), _mm(imag, s, dtype))
    out_i = F.subtract(_mm(imag, c, dtype), _mm(real, s, dtype))
    return out_r, out_i


def _swap(x):
    return N.swapaxes(x, -1, -2)


def _cast_pair(z: np.ndarray, dtype: str) -> tuple:
    return np.real(z).astype(dtype), np.imag(z).astype(dtype)


def fft(x):
    """The 1-D discrete Fourier transform along the last axis of ``x = (real, imag)``: (real, imag)."""
    real, imag, dtype = _pair(x)
    _rank(_shape(real), 1, "FFT")
    _static(_shape(real), (-1,), "fft")
    if not _graph(real, imag):
        return _cast_pair(np.fft.fft(_host(real) + 1j * _host(imag).astype(np.float64)), dtype)
    return _complex_matmul(real, imag, _shape(real)[-1], dtype, inverse=False)


def _fft2(x, inverse: bool, op: str):
    real, imag, dtype = _pair(x)
    _rank(_shape(real), 2, op)
    _static(_shape(real), (-2, -1), op.lower())
    if not _graph(real, imag):
        z = _host(real) + 1j * _host(imag).astype(np.float64)
        return _cast_pair(np.fft.ifft2(z) if inverse else np.fft.fft2(z), dtype)
    m, n = _shape(real)[-2:]
    r, i = _complex_matmul(real, imag, n, dtype, inverse)
    r, i = _complex_matmul(_swap(r), _swap(i), m, dtype, inverse)
    return _swap(r), _swap(i)


def fft2(x):
    """The 2-D discrete Fourier transform over the last two axes of ``x = (real, imag)``: (real, imag)."""
    return _fft2(x, False, "FFT2D")


def ifft2(x):
    """The inverse 2-D discrete Fourier transform over the last two axes (scaled by 1 / (rows * cols))."""
    return _fft2(x, True, "IFFT2D")


def _rfft_dtype(x) -> str:
    """float64 for a float64 tensor; float32 otherwise (a NumPy float64 array, ints), as tf.signal.rfft."""
    return "float64" if dtype_of(x) == "float64" and type(x) is not np.ndarray else "float32"


def rfft(x, fft_length=None):
    """The 1-D Fourier transform of a real signal along the last axis: its ``fft_length // 2 + 1`` bins as
    (real, imag); the axis is cropped or zero-padded to `fft_length` (default its length)."""
    shape = _shape(x)
    if len(shape) < 1:
        raise ValueError(f"Shape {shape} must have rank at least 1")
    n = shape[-1] if fft_length is None else int(fft_length)
    _static(shape, (-1,), "rfft")
    dtype, bins = _rfft_dtype(x), n // 2 + 1
    if not _graph(x):
        return _cast_pair(np.fft.rfft(_host(x).astype(np.float64), n), dtype)
    x = F.cast(x, dtype) if dtype_of(x) != dtype else x
    c, s = _dft(shape[-1], n, bins)
    return _mm(x, c, dtype), F.negative(_mm(x, s, dtype))


def irfft(x, fft_length=None):
    """The real signal (length `fft_length`, default ``2 * (bins - 1)``) whose rfft is ``x = (real, imag)``
    along the last axis; the bins are cropped or zero-padded to ``fft_length // 2 + 1``."""
    real, imag, dtype = _pair(x)
    shape = _shape(real)
    _rank(shape, 1, "IRFFT")
    _static(shape, (-1,), "irfft")
    n = 2 * (shape[-1] - 1) if fft_length is None else int(fft_length)
    if not _graph(real, imag):
        return np.fft.irfft(_host(real) + 1j * _host(imag).astype(np.float64), n).astype(dtype)
    c, s = _irfft_matrices(shape[-1], n)
    return F.add(_mm(real, c, dtype), _mm(imag, s, dtype))


@functools.lru_cache(maxsize=64)
def _irfft_matrices(bins_in: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(bins_in, n) matrices of the inverse real transform: the Hermitian weights (1 for the DC and Nyquist
    bins, 2 for the others), 1/n, and zero rows for bins past ``n // 2 + 1``."""
    used = min(bins_in, n // 2 + 1)
    k = np.arange(used)[:, None]
    t = np.arange(n)[None, :]
    weight = np.where((k == 0) | (2 * k == n), 1.0, 2.0) / n
    angle = 2.0 * np.pi * ((k * t) % n) / n
    c, s = np.zeros((bins_in, n)), np.zeros((bins_in, n))
    c[:used], s[:used] = weight * np.cos(angle), -weight * np.sin(angle)
    return c, s


# --- short-time transforms -------------------------------------------------------------------------------
def _window(window, sequence_length: int, fft_length: int) -> np.ndarray | None:
    """The float64 window, zero-padded to fft_length as Keras centres it (None: no window)."""
    if window is None:
        return None
    if isinstance(window, str):
        if window not in {"hann", "hamming"}:
            raise ValueError(f'If a string is passed to `window`, it must be one of `"hann"`, `"hamming"`. '
                             f"Received: window={window}")
        a = 0.5 if window == "hann" else 0.54
        w = a - (1 - a) * np.cos(2 * np.pi * np.arange(sequence_length) / sequence_length)  # periodic
    else:
        w = _host(window).astype(np.float64)
        if w.ndim != 1 or w.shape[-1] != sequence_length:
            raise ValueError(f"The shape of `window` must be equal to [sequence_length].Received: window "
                             f"shape={w.shape}")
    left = (fft_length - sequence_length) // 2
    return np.pad(w, (left, fft_length - sequence_length - left))


def _stride(sequence_stride) -> int:
    if not isinstance(sequence_stride, int) or sequence_stride <= 0:
        raise ValueError(f"`sequence_stride` must be a positive integer. Received: sequence_stride={sequence_stride}")
    return sequence_stride


def stft(x, sequence_length, sequence_stride, fft_length, window="hann", center=True):
    """The short-time Fourier transform along the last axis: frames of `fft_length` samples every
    `sequence_stride`, each multiplied by the window (of `sequence_length`, centred) and transformed: (real,
    imag) of shape ``x.shape[:-1] + (frames, fft_length // 2 + 1)``. `center` reflect-pads x by
    ``fft_length // 2`` on both sides first."""
    stride = _stride(sequence_stride)
    dtype = dtype_of(x)
    if dtype not in ("float32", "float64"):
        raise TypeError(f"Invalid input type. Expected `float32` or `float64`. Received: input type={dtype}")
    if fft_length < sequence_length:
        raise ValueError(f"`fft_length` must equal or larger than `sequence_length`. Received: "
                         f"sequence_length={sequence_length}, fft_length={fft_length}")
    win = _window(window, sequence_length, fft_length)
    win = np.ones(fft_length) if win is None else win
    half = fft_length // 2
    if not _graph(x):
        a = _host(x).astype(np.float64)
        if center:
            a = np.pad(a, [(0, 0)] * (a.ndim - 1) + [(half, half)], mode="reflect")
        if a.shape[-1] < fft_length:  # no whole frame: none, as TensorFlow frames it
            return _cast_pair(np.zeros(a.shape[:-1] + (0, fft_length // 2 + 1), complex), dtype)
        frames = np.lib.stride_tricks.sliding_window_view(a, fft_length, axis=-1)[..., ::stride, :]
        return _cast_pair(np.fft.rfft(frames * win, fft_length), dtype)
    return _stft_graph(x, stride, fft_length, win, center, dtype)


def _stft_graph(x, stride: int, n: int, win: np.ndarray, center: bool, dtype: str):
    """stft as one strided convolution: the leading per-sample dims become channels, the kernel is the
    windowed DFT, block-diagonal over channels."""
    from flexflow_keras.ops.conv_api import conv
    from flexflow_keras.ops.numpy_extra import pad

    eager = not F._symbolic(x)
    if eager:  # a batch axis, as a symbolic tensor has
        x = F.expand_dims(F._tensor(x, False), 0)
    shape = _shape(x)
    _static(shape, range(1, len(shape)), "stft")
    if center:
        x = pad(x, [(0, 0)] * (len(shape) - 1) + [(n // 2, n // 2)], mode="reflect")
    lead = shape[1:-1]
    channels = int(np.prod(lead, dtype=np.int64))
    length = _shape(x)[-1]
    x = F.transpose(x, (0, len(shape) - 1, *range(1, len(shape) - 1)))
    x = N.reshape(x, (-1, length, channels))
    bins = n // 2 + 1
    c, s = _dft(n, n, bins)
    block = np.concatenate([c * win[:, None], -s * win[:, None]], axis=1)  # (n, 2 * bins)
    kernel = np.zeros((n, channels, channels * 2 * bins))
    for ch in range(channels):
        kernel[:, ch, ch * 2 * bins:(ch + 1) * 2 * bins] = block
    y = conv(x, F._weight(kernel.astype(dtype)), strides=stride)  # (batch, frames, channels * 2 * bins)
    frames = _shape(y)[1]
    y = N.reshape(y, (-1, frames, *lead, 2 * bins))
    y = F.transpose(y, (0, *range(2, len(lead) + 2), 1, len(lead) + 2))
    real, imag = N.get_item(y, (Ellipsis, slice(0, bins))), N.get_item(y, (Ellipsis, slice(bins, 2 * bins)))
    if eager:
        real, imag = F.squeeze(real, 0), F.squeeze(imag, 0)
    return real, imag


def _inverse_window(win: np.ndarray, stride: int) -> np.ndarray:
    """tf.signal.inverse_stft_window_fn: the window over the sum of the squared windows overlapping each
    sample (Griffin and Lim, eq. 7); zero where that sum is zero."""
    n = len(win)
    overlaps = -(-n // stride)
    denom = np.pad(win**2, (0, overlaps * stride - n)).reshape(overlaps, stride).sum(0)
    denom = np.tile(denom, overlaps)[:n]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom == 0.0, 0.0, win / denom)


def istft(x, sequence_length, sequence_stride, fft_length, length=None, window="hann", center=True):
    """The inverse of `stft` (same arguments): each frame's inverse real transform times the inverse window,
    overlap-added every `sequence_stride` samples; `length` cuts the result to at most that many samples, `center` drops the
    ``fft_length // 2`` samples the forward padding added at the start (and at the end without `length`)."""
    stride = _stride(sequence_stride)
    real, imag, dtype = _pair(x)
    shape = _shape(real)
    if len(shape) < 2:
        raise ValueError(f"Input should have rank >= 2. Received: input.shape = {shape}")
    win = _window(window, sequence_length, fft_length)
    win = None if win is None else _inverse_window(win, stride)
    n, count = fft_length, shape[-2]
    total = n + stride * (count - 1)
    start = n // 2 if center else 0
    end = start + length if length is not None else (total - n // 2 if center else total)
    if not _graph(real, imag):
        frames = np.fft.irfft(_host(real) + 1j * _host(imag).astype(np.float64), n)
        frames = frames if win is None else frames * win
        out = np.zeros(frames.shape[:-2] + (total,))
        for f in range(count):
            out[..., f * stride:f * stride + n] += frames[..., f, :]
        return out[..., start:max(end, start)].astype(dtype)
    _static(shape, (-2, -1), "istft")
    frames = irfft((real, imag), n)
    if win is not None:
        frames = F.multiply(frames, win.astype(dtype))
    return N.get_item(_overlap_add(frames, stride, dtype), (Ellipsis, slice(start, end)))


def _overlap_add(frames, stride: int, dtype: str):
    """Frames (..., count, n) summed at offsets ``f * stride``: each frame cut into r = ceil(n / stride)
    pieces of `stride` samples, piece j of frame f landing in output block f + j."""
    from flexflow_keras.ops.numpy_extra import pad

    shape = _shape(frames)
    lead, count, n = shape[:-2], shape[-2], shape[-1]
    r = -(-n // stride)
    nd = len(shape)
    if r * stride != n:
        frames = pad(frames, [(0, 0)] * (nd - 1) + [(0, r * stride - n)])
    batch = (-1,) if lead and lead[0] is None else ()
    pieces = N.reshape(frames, (*batch, *lead[len(batch):], count, r, stride))
    out = None
    for j in range(r):
        piece = N.get_item(pieces, (Ellipsis, slice(None), j, slice(None)))  # (..., count, stride)
        piece = pad(piece, [(0, 0)] * (nd - 2) + [(j, r - 1 - j), (0, 0)])
        out = piece if out is None else F.add(out, piece)
    return N.reshape(out, (*batch, *lead[len(batch):], (count + r - 1) * stride))
