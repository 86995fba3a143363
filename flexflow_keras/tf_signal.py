"""`tf.signal`, `tf.audio` and TensorFlow's complex numbers on the host, for `python -m flexflow_keras`
(tf_compat.py): what an audio pipeline's `Dataset.map` calls (``tf.io.read_file`` -> ``tf.audio.decode_wav``
-> ``tf.signal.stft`` / ``tf.signal.fft`` -> ``tf.abs``), computed with NumPy in TensorFlow's dtypes.

- `tf.audio.decode_wav` / `encode_wav`: 16-bit PCM WAV files (as TensorFlow's decoder takes), samples as
  float32 in [-1, 1) shaped (samples, channels), and the rate as an int32 scalar; `desired_channels` keeps
  the first channels or repeats a mono one, `desired_samples` cuts or pads with zeros, as TensorFlow's.
- `tf.signal`: `fft` / `ifft` / `fft2d` / `ifft2d` / `fft3d` / `ifft3d` on complex inputs (their innermost
  dims), `rfft` / `irfft` / `rfft2d` / `irfft2d` with `fft_length`, `frame`, `stft` (periodic Hann window,
  `fft_length` the next power of two by default, `pad_end`), `hann_window` / `hamming_window`, and
  `linear_to_mel_weight_matrix` (HTK mel scale, as TensorFlow's).
- `tf.complex`, `tf.math.real` / `imag` / `conj` / `angle`, and `tf.abs` of a complex tensor (its float
  magnitude; real tensors go to keras.ops.abs as before).

Single precision stays single (complex64 in, complex64 out; float32 signals give complex64 spectra) and
double stays double, as TensorFlow's kernels; the Fourier ops convert a non-tensor input (NumPy, pandas, a
list) as TensorFlow does, preferring float32 / complex64. On a model's symbolic tensors `tf.complex`, `fft` /
`fft2d` / `ifft2d`, `real` / `imag` and `tf.abs` run through tf_signal_graph.py ((real, imag) pairs of graph tensors
and Keras 3's fft ops); the other functions run on arrays only, and the error says to compute them in the
input pipeline.
"""

from __future__ import annotations

import io
import wave

import numpy as np

from flexflow_keras import tf_signal_graph
from flexflow_keras.errors import ArgumentError, DataError


def _out(a):
    from flexflow_keras.data.dataset import as_tensor

    return as_tensor(np.asarray(a))


def _host(x, who: str) -> np.ndarray:
    from flexflow_keras.ops.graph import KerasTensor

    if isinstance(x, KerasTensor):
        raise ArgumentError(f"tf.{who} runs on arrays (in a Dataset.map, or on NumPy data), not on a model's "
                            f"symbolic tensor {x.name!r}: flexflow_keras has no Fourier op inside a model. "
                            f"Compute it in the input pipeline and feed the result to the model.")
    return np.asarray(x)


def _fourier_input(x, who: str) -> np.ndarray:
    """The input of a Fourier op as TensorFlow converts it: a value that is not a tensor (a NumPy array, a
    pandas column, a list) with its float32 / complex64 preference (float64 -> float32, complex128 ->
    complex64: tf.signal.rfft of a float64 NumPy signal is complex64); a tensor (tf.constant, a Dataset.map
    element, a variable) keeps its dtype."""
    a = _host(x, who)
    if hasattr(x, "numpy"):
        return a
    return a.astype({np.dtype(np.float64): np.float32, np.dtype(np.complex128): np.complex64}.get(a.dtype, a.dtype))


def _complex_of(a: np.ndarray) -> np.ndarray:
    """A complex array of the input's precision (float64 -> complex128, anything else -> complex64)."""
    if a.dtype.kind == "c":
        return a
    return a.astype(np.complex128 if a.dtype == np.float64 else np.complex64)


def _real_dtype(a: np.ndarray):
    return np.float64 if a.dtype in (np.float64, np.complex128) else np.float32


# --- complex numbers ---------------------------------------------------------------------------------------
def complex(real, imag, name=None):  # noqa: A001 - TensorFlow's name
    """`tf.complex(real, imag)`: float32 parts give complex64, float64 parts complex128."""
    if tf_signal_graph.is_symbolic(real) or tf_signal_graph.is_symbolic(imag):
        return tf_signal_graph.complex_(real, imag)
    r, i = _host(real, "complex"), _host(imag, "complex")
    if r.dtype != i.dtype or r.dtype not in (np.float32, np.float64):
        raise ArgumentError(f"tf.complex expects real and imag of one float dtype (float32 or float64), received "
                            f"{r.dtype} and {i.dtype}; cast them first.")
    return _out((r + 1j * i).astype(np.complex64 if r.dtype == np.float32 else np.complex128))


def real(input, name=None):  # noqa: A002 - TensorFlow's argument name
    if tf_signal_graph.is_symbolic(input):
        return tf_signal_graph.real(input)
    a = _host(input, "math.real")
    return _out(a.real.astype(_real_dtype(a)) if a.dtype.kind == "c" else a)


def imag(input, name=None):  # noqa: A002
    if tf_signal_graph.is_symbolic(input):
        return tf_signal_graph.imag(input)
    a = _host(input, "math.imag")
    return _out(a.imag.astype(_real_dtype(a)) if a.dtype.kind == "c" else np.zeros_like(a))


def conj(x, name=None):
    return _out(np.conj(_host(x, "math.conj")))


def cast(x, dtype, name=None):
    """`tf.cast` / `tf.math.cast`: a complex value cast to a real dtype keeps its real part, as TensorFlow's
    (a model's (real, imag) pair too); anything else is keras.ops.cast. `dtype` may be TensorFlow's
    DataType number (tf_keywords.tf_dtype)."""
    from flexflow_keras import ops, tf_keywords

    dtype = tf_keywords.tf_dtype(dtype)
    try:
        target = str(np.dtype(getattr(dtype, "name", dtype)))
    except TypeError:  # not a NumPy dtype ("string"): keras.ops.cast's own rules and errors
        return ops.cast(x, dtype)
    if isinstance(x, tf_signal_graph.SymbolicComplex):
        return tf_signal_graph.cast(x, target)
    if not tf_signal_graph.is_symbolic(x) and np.iscomplexobj(x) and np.dtype(target).kind != "c":
        return _out(np.real(np.asarray(x)).astype(target))
    return ops.cast(x, target)


def angle(input, name=None):  # noqa: A002
    a = _host(input, "math.angle")
    return _out(np.angle(a).astype(_real_dtype(a)))


def abs_(x, name=None):
    """`tf.abs` / `tf.math.abs`: a complex tensor's magnitude (float); anything else is keras.ops.abs."""
    from flexflow_keras.ops.graph import KerasTensor

    if isinstance(x, tf_signal_graph.SymbolicComplex) or (isinstance(x, KerasTensor) and str(x.dtype).startswith(
            "complex")):
        return tf_signal_graph.magnitude(x)
    if not isinstance(x, KerasTensor) and np.asarray(x).dtype.kind == "c":
        a = np.asarray(x)
        return _out(np.abs(a).astype(_real_dtype(a)))
    from flexflow_keras import ops

    return ops.abs(x)


# --- Fourier transforms ------------------------------------------------------------------------------------
def _fft_family(numpy_fn, rank: int, who: str):
    def transform(input, name=None):  # noqa: A002
        if tf_signal_graph.is_symbolic(input):
            return tf_signal_graph.transform(input, rank, who.startswith("i"), who)
        a = _fourier_input(input, f"signal.{who}")
        if a.dtype.kind != "c":
            raise ArgumentError(f"tf.signal.{who} expects a complex tensor (complex64 or complex128), received "
                                f"{a.dtype}; make one with tf.complex(x, tf.zeros_like(x)) or tf.cast(x, "
                                f"tf.complex64), or use tf.signal.r{who.lstrip('i')} for real signals.")
        if a.ndim < rank:
            raise ArgumentError(f"tf.signal.{who} transforms the innermost {rank} dim(s); received shape {a.shape}.")
        return _out(numpy_fn(a, axes=tuple(range(-rank, 0))).astype(a.dtype))
    transform.__name__ = who
    return transform


fft = _fft_family(np.fft.fftn, 1, "fft")
ifft = _fft_family(np.fft.ifftn, 1, "ifft")
fft2d = _fft_family(np.fft.fftn, 2, "fft2d")
ifft2d = _fft_family(np.fft.ifftn, 2, "ifft2d")
fft3d = _fft_family(np.fft.fftn, 3, "fft3d")
ifft3d = _fft_family(np.fft.ifftn, 3, "ifft3d")


def _lengths(fft_length, rank: int, default, who: str) -> tuple:
    if fft_length is None:
        return tuple(default)
    n = np.asarray(fft_length).reshape(-1)
    if n.size != rank or (n < 1).any():
        raise ArgumentError(f"tf.signal.{who} expects fft_length of {rank} positive integer(s), received "
                            f"{fft_length!r}.")
    return tuple(int(v) for v in n)


def _rfft_family(rank: int, who: str):
    def transform(input_tensor, fft_length=None, name=None):
        a = _fourier_input(input_tensor, f"signal.{who}")
        if a.dtype.kind not in "fiu":
            raise ArgumentError(f"tf.signal.{who} expects a real tensor (float32 or float64), received {a.dtype}.")
        n = _lengths(fft_length, rank, a.shape[-rank:], who)
        out = np.fft.rfftn(a, s=n, axes=tuple(range(-rank, 0)))
        return _out(out.astype(np.complex128 if a.dtype == np.float64 else np.complex64))
    transform.__name__ = who
    return transform


def _irfft_family(rank: int, who: str):
    def transform(input_tensor, fft_length=None, name=None):
        a = _fourier_input(input_tensor, f"signal.{who}")
        if a.dtype.kind != "c":
            raise ArgumentError(f"tf.signal.{who} expects a complex tensor (an rfft's output), received {a.dtype}.")
        default = a.shape[-rank:-1] + (2 * (a.shape[-1] - 1),)
        n = _lengths(fft_length, rank, default, who)
        return _out(np.fft.irfftn(a, s=n, axes=tuple(range(-rank, 0))).astype(_real_dtype(a)))
    transform.__name__ = who
    return transform


rfft = _rfft_family(1, "rfft")
irfft = _irfft_family(1, "irfft")
rfft2d = _rfft_family(2, "rfft2d")
irfft2d = _irfft_family(2, "irfft2d")
rfft3d = _rfft_family(3, "rfft3d")
irfft3d = _irfft_family(3, "irfft3d")


# --- windows, frames, spectrograms --------------------------------------------------------------------------
def _raised_cosine(window_length, periodic, dtype, a: float, who: str):
    n = int(window_length)
    if n < 0:
        raise ArgumentError(f"tf.signal.{who} expects window_length >= 0, received {window_length!r}.")
    dtype = np.dtype(dtype or "float32")
    if n == 1:
        return _out(np.ones(1, dtype))
    even = 1 - np.mod(n, 2)
    denom = n + even * int(bool(periodic)) - 1
    k = np.arange(n, dtype=np.float64)
    return _out((a - (1 - a) * np.cos(2 * np.pi * k / max(denom, 1))).astype(dtype))


def hann_window(window_length, periodic=True, dtype="float32", name=None):
    """`tf.signal.hann_window`: 0.5 - 0.5 cos(2 pi n / N), N the length (periodic) or the length - 1."""
    return _raised_cosine(window_length, periodic, dtype, 0.5, "hann_window")


def hamming_window(window_length, periodic=True, dtype="float32", name=None):
    """`tf.signal.hamming_window`: 0.54 - 0.46 cos(2 pi n / N)."""
    return _raised_cosine(window_length, periodic, dtype, 0.54, "hamming_window")


def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1, name=None):
    """`tf.signal.frame`: `frame_length` samples every `frame_step` along `axis` (which becomes two dims,
    frames and samples); `pad_end` pads with `pad_value` so every sample starts a frame's worth."""
    a = _host(signal, "signal.frame")
    length, step = int(frame_length), int(frame_step)
    if length < 1 or step < 1:
        raise ArgumentError(f"tf.signal.frame expects positive frame_length and frame_step, received "
                            f"frame_length={frame_length!r}, frame_step={frame_step!r}.")
    axis = int(axis) % a.ndim if a.ndim else 0
    n = a.shape[axis]
    if pad_end:
        frames = -(-n // step)
        need = max(0, (frames - 1) * step + length - n)
        pad = [(0, 0)] * a.ndim
        pad[axis] = (0, need)
        a = np.pad(a, pad, constant_values=pad_value)
    else:
        frames = max(0, 1 + (n - length) // step) if n >= length else 0
    idx = np.arange(frames)[:, None] * step + np.arange(length)[None, :]
    return _out(np.take(a, idx, axis=axis))


def stft(signals, frame_length, frame_step, fft_length=None, window_fn=hann_window, pad_end=False, name=None):
    """`tf.signal.stft`: windowed frames' rfft, shaped (..., frames, fft_length // 2 + 1), complex64 for
    float32 signals. `fft_length` defaults to the smallest power of two holding `frame_length`; `window_fn`
    is called as ``window_fn(frame_length, dtype=...)`` (None: no window)."""
    a = _host(signals, "signal.stft")
    if a.dtype.kind not in "fiu":
        raise ArgumentError(f"tf.signal.stft expects real signals (float32 or float64), received {a.dtype}.")
    a = a.astype(np.float64 if a.dtype == np.float64 else np.float32)
    length = int(frame_length)
    n_fft = int(fft_length) if fft_length is not None else 1 << max(0, (length - 1).bit_length())
    if n_fft < length:
        raise ArgumentError(f"tf.signal.stft expects fft_length >= frame_length, received fft_length={n_fft}, "
                            f"frame_length={length}.")
    frames = np.asarray(frame(a, length, frame_step, pad_end=pad_end))
    if window_fn is not None:
        frames = frames * np.asarray(window_fn(length, dtype=a.dtype.name), a.dtype)
    out = np.fft.rfft(frames, n=n_fft, axis=-1)
    return _out(out.astype(np.complex128 if a.dtype == np.float64 else np.complex64))


def _hz_to_mel(f):
    return 1127.0 * np.log1p(np.asarray(f, np.float64) / 700.0)


def linear_to_mel_weight_matrix(num_mel_bins=20, num_spectrogram_bins=129, sample_rate=8000,
                                lower_edge_hertz=125.0, upper_edge_hertz=3800.0, dtype="float32", name=None):
    """`tf.signal.linear_to_mel_weight_matrix`: (num_spectrogram_bins, num_mel_bins) triangular filters on
    the HTK mel scale, the DC bin's row zero, as TensorFlow's."""
    bins, mels, rate = int(num_spectrogram_bins), int(num_mel_bins), float(sample_rate)
    lo, hi = float(lower_edge_hertz), float(upper_edge_hertz)
    if mels < 1 or bins < 2 or rate <= 0 or not 0 <= lo < hi <= rate / 2:
        raise ArgumentError(f"tf.signal.linear_to_mel_weight_matrix expects num_mel_bins >= 1, "
                            f"num_spectrogram_bins >= 2, sample_rate > 0 and 0 <= lower_edge_hertz < "
                            f"upper_edge_hertz <= sample_rate / 2; received num_mel_bins={num_mel_bins}, "
                            f"num_spectrogram_bins={num_spectrogram_bins}, sample_rate={sample_rate}, "
                            f"lower_edge_hertz={lower_edge_hertz}, upper_edge_hertz={upper_edge_hertz}.")
    linear = np.linspace(0.0, rate / 2, bins)[1:]
    spec_mel = _hz_to_mel(linear)[:, None]
    edges = np.linspace(_hz_to_mel(lo), _hz_to_mel(hi), mels + 2)
    lower, center, upper = edges[:-2][None, :], edges[1:-1][None, :], edges[2:][None, :]
    lower_slopes = (spec_mel - lower) / (center - lower)
    upper_slopes = (upper - spec_mel) / (upper - center)
    weights = np.maximum(0.0, np.minimum(lower_slopes, upper_slopes))
    return _out(np.pad(weights, [[1, 0], [0, 0]]).astype(np.dtype(dtype)))


# --- tf.audio ------------------------------------------------------------------------------------------------
def decode_wav(contents, desired_channels=-1, desired_samples=-1, name=None):
    """`tf.audio.decode_wav`: (audio float32 (samples, channels) in [-1, 1), sample_rate int32)."""
    from flexflow_keras.tf_io import _bytes

    data = _bytes(contents, "audio.decode_wav")
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            channels, width, rate = w.getnchannels(), w.getsampwidth(), w.getframerate()
            raw = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as e:
        raise DataError(f"tf.audio.decode_wav: the contents are not a readable WAV file ({e}).") from None
    if width != 2:
        raise DataError(f"tf.audio.decode_wav reads 16-bit PCM WAV files, as TensorFlow's; this one has "
                        f"{8 * width}-bit samples. Convert it (e.g. ffmpeg -i in.wav -acodec pcm_s16le out.wav).")
    audio = (np.frombuffer(raw, "<i2").reshape(-1, channels) / 32768.0).astype(np.float32)
    want = int(desired_channels)
    if want > 0 and want != channels:
        if want < channels:
            audio = audio[:, :want]
        elif channels == 1:
            audio = np.repeat(audio, want, axis=1)
        else:
            raise DataError(f"tf.audio.decode_wav(desired_channels={want}): the file has {channels} channels; "
                            f"only a mono file is repeated into more channels, as TensorFlow's.")
    samples = int(desired_samples)
    if samples >= 0:
        audio = audio[:samples] if samples <= len(audio) else np.pad(audio, [(0, samples - len(audio)), (0, 0)])
    return _out(audio), _out(np.int32(rate))


def encode_wav(audio, sample_rate, name=None):
    """`tf.audio.encode_wav`: float samples (samples, channels) in [-1, 1] as a 16-bit PCM WAV's bytes."""
    a = _host(audio, "audio.encode_wav")
    if a.ndim != 2:
        raise ArgumentError(f"tf.audio.encode_wav expects audio shaped (samples, channels), received shape "
                            f"{a.shape}.")
    pcm = np.clip(np.round(a.astype(np.float64) * 32768.0), -32768, 32767).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(a.shape[1])
        w.setsampwidth(2)
        w.setframerate(int(np.asarray(sample_rate)))
        w.writeframes(pcm.tobytes())
    return _out(np.asarray(buf.getvalue(), dtype=object))


SIGNAL_NAMES = ("fft", "ifft", "fft2d", "ifft2d", "fft3d", "ifft3d", "rfft", "irfft", "rfft2d", "irfft2d",
                "rfft3d", "irfft3d", "frame", "stft", "hann_window", "hamming_window",
                "linear_to_mel_weight_matrix")
AUDIO_NAMES = ("decode_wav", "encode_wav")
MATH_NAMES = {"complex": complex, "cast": cast, "real": real, "imag": imag, "conj": conj, "angle": angle, "abs": abs_}
