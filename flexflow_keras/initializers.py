"""`keras.initializers`: callables ``(shape, dtype) -> np.ndarray`` giving the initial value of weights.

Keras 3 semantics: an initializer seeded with an integer, or unseeded (its seed is then drawn from the
framework's generator when it is constructed, see `utils.set_random_seed`), returns the same values on
every call. `get` accepts names (``"glorot_uniform"``, ``"GlorotUniform"``, aliases ``"uniform"``,
``"normal"``, ``"zero"``, ``"one"``), config dicts, classes, instances and plain functions.
"""

from __future__ import annotations

import math

import numpy as np

from flexflow_keras.utils import naming, rng
from flexflow_keras.utils.serialization import (
    Configurable,
    deserialize_instance,
    named_instance,
    serialize_keras_object,
)


def _dtype(dtype) -> str:
    if dtype is None:
        from flexflow_keras import backend

        return backend.floatx()
    return str(np.dtype(dtype))


def compute_fans(shape, input_axes=None, output_axes=None) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of `shape`: the products over `input_axes` and `output_axes` when
    both are given (Keras 3.15), else Keras' rule, with the receptive field for conv kernels."""
    shape = tuple(shape)
    if input_axes is not None and output_axes is not None:
        return (int(math.prod(shape[a] for a in input_axes)), int(math.prod(shape[a] for a in output_axes)))
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer(Configurable):
    """Base class: subclasses implement ``__call__(shape, dtype=None)`` and `get_config`."""

    def __call__(self, shape, dtype=None) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(shape, dtype=None).")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_config().items())})"


class Zeros(Initializer):
    """All zeros."""

    def __call__(self, shape, dtype=None):
        return np.zeros(tuple(shape), dtype=_dtype(dtype))


class Ones(Initializer):
    """All ones."""

    def __call__(self, shape, dtype=None):
        return np.ones(tuple(shape), dtype=_dtype(dtype))


class Constant(Initializer):
    """Every element equal to `value`.

    Args:
        value: a Python scalar (or an array broadcastable to the shape).
    """

    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype=None):
        return np.broadcast_to(np.asarray(self.value, dtype=_dtype(dtype)), tuple(shape)).copy()

    def get_config(self):
        value = self.value.tolist() if isinstance(self.value, np.ndarray) else self.value
        return {"value": value}


class Identity(Initializer):
    """`gain` times the identity matrix (2-D shapes only).

    Args:
        gain: the diagonal value.
    """

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None):
        if len(shape) != 2:
            raise ValueError(f"Identity initializer needs a 2-D shape, received shape={tuple(shape)}. "
                             "Use it for Dense kernels or pick another initializer.")
        return (self.gain * np.eye(*shape)).astype(_dtype(dtype))

    def get_config(self):
        return {"gain": self.gain}


class RandomInitializer(Initializer):
    """Base of the random initializers: holds the seed (drawn once when not given)."""

    def __init__(self, seed=None):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise ValueError(f"{type(self).__name__} expects seed to be an integer or None, received "
                             f"seed={seed!r}.")
        self._init_seed = seed
        self.seed = int(seed) if seed is not None else rng.default_seed()

    def _rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)

    def get_config(self):
        return {"seed": self._init_seed}


def clone_draws(*initializers_) -> None:
    """The Python `random` draws Keras 3 makes when it clones these initializers for a sub-layer (an
    attention layer's projections: `cls.from_config(get_config())`): one per unseeded random initializer
    (`utils/rng.default_seed`). Ours share the parent's, so only the draws are made."""
    for init in initializers_:
        if isinstance(init, RandomInitializer) and init._init_seed is None:
            rng.keras_draw()


def _truncated_normal(gen: np.random.Generator, shape, mean: float, stddev: float) -> np.ndarray:
    """Normal samples redrawn until within two standard deviations (as Keras/TF do)."""
    out = gen.standard_normal(shape)
    bad = np.abs(out) > 2.0
    while bad.any():
        out[bad] = gen.standard_normal(int(bad.sum()))
        bad = np.abs(out) > 2.0
    return out * stddev + mean


class RandomNormal(RandomInitializer):
    """Normal distribution.

    Args:
        mean: the mean.
        stddev: the standard deviation.
        seed: integer or None.
    """

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev = mean, stddev
        super().__init__(seed)

    def __call__(self, shape, dtype=None):
        v = self._rng().normal(self.mean, self.stddev, tuple(shape))
        return v.astype(_dtype(dtype))

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, **super().get_config()}


class RandomUniform(RandomInitializer):
    """Uniform distribution on [minval, maxval).

    Args:
        minval: lower bound.
        maxval: upper bound.
        seed: integer or None.
    """

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval = minval, maxval
        super().__init__(seed)

    def __call__(self, shape, dtype=None):
        v = self._rng().uniform(self.minval, self.maxval, tuple(shape))
        return v.astype(_dtype(dtype))

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, **super().get_config()}


class TruncatedNormal(RandomInitializer):
    """Normal distribution with values beyond two standard deviations redrawn.

    Args:
        mean: the mean.
        stddev: the standard deviation before truncation.
        seed: integer or None.
    """

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev = mean, stddev
        super().__init__(seed)

    def __call__(self, shape, dtype=None):
        return _truncated_normal(self._rng(), tuple(shape), self.mean, self.stddev).astype(_dtype(dtype))

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, **super().get_config()}


class VarianceScaling(RandomInitializer):
    """Samples scaled to the weight's fan: variance ``scale / n``.

    Args:
        scale: positive scaling factor.
        mode: ``"fan_in"``, ``"fan_out"`` or ``"fan_avg"`` (which n).
        distribution: ``"truncated_normal"`` (``"normal"`` is another name for it, as in Keras),
            ``"untruncated_normal"`` or ``"uniform"``.
        seed: integer or None.
        input_axes, output_axes: lists of axes whose sizes multiply to the fan-in and fan-out (both
            given), in place of Keras' rule from the shape.
    """

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTS = ("truncated_normal", "untruncated_normal", "normal", "uniform")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None, input_axes=None,
                 output_axes=None):
        if not scale > 0:
            raise ValueError(f"VarianceScaling expects a positive scale, received scale={scale!r}.")
        if mode not in self._MODES:
            raise ValueError(f"VarianceScaling expects mode in {list(self._MODES)}, received mode={mode!r}.")
        dist = str(distribution).lower()
        if dist not in self._DISTS:
            raise ValueError(f"VarianceScaling expects distribution in {list(self._DISTS)}, received "
                             f"distribution={distribution!r}.")
        self.scale, self.mode = scale, mode
        self.distribution = "truncated_normal" if dist == "normal" else dist
        self.input_axes, self.output_axes = input_axes, output_axes
        super().__init__(seed)

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        fan_in, fan_out = compute_fans(shape, self.input_axes, self.output_axes)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        gen = self._rng()
        if self.distribution == "truncated_normal":
            # 0.8796... is the stddev of a unit normal truncated at two standard deviations.
            v = _truncated_normal(gen, shape, 0.0, math.sqrt(scale) / 0.87962566103423978)
        elif self.distribution == "untruncated_normal":
            v = gen.normal(0.0, math.sqrt(scale), shape)
        else:
            limit = math.sqrt(3.0 * scale)
            v = gen.uniform(-limit, limit, shape)
        return v.astype(_dtype(dtype))

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "input_axes": self.input_axes, "output_axes": self.output_axes, **super().get_config()}


class _Preset(VarianceScaling):
    """A VarianceScaling with fixed scale/mode/distribution whose config is only the seed."""

    _preset: tuple[float, str, str] = (1.0, "fan_in", "truncated_normal")

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        scale, mode, dist = self._preset
        super().__init__(scale=scale, mode=mode, distribution=dist, seed=seed, input_axes=input_axes,
                         output_axes=output_axes)

    def get_config(self):
        return {"seed": self._init_seed, "input_axes": self.input_axes, "output_axes": self.output_axes}


class GlorotUniform(_Preset):
    """Uniform on ±sqrt(6 / (fan_in + fan_out)) (the default kernel initializer)."""

    _preset = (1.0, "fan_avg", "uniform")


class GlorotNormal(_Preset):
    """Truncated normal with stddev sqrt(2 / (fan_in + fan_out))."""

    _preset = (1.0, "fan_avg", "truncated_normal")


class HeNormal(_Preset):
    """Truncated normal with stddev sqrt(2 / fan_in)."""

    _preset = (2.0, "fan_in", "truncated_normal")


class HeUniform(_Preset):
    """Uniform on ±sqrt(6 / fan_in)."""

    _preset = (2.0, "fan_in", "uniform")


class LecunNormal(_Preset):
    """Truncated normal with stddev sqrt(1 / fan_in)."""

    _preset = (1.0, "fan_in", "truncated_normal")


class LecunUniform(_Preset):
    """Uniform on ±sqrt(3 / fan_in)."""

    _preset = (1.0, "fan_in", "uniform")


class Orthogonal(RandomInitializer):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal matrix, times `gain`.

    Args:
        gain: multiplicative factor.
        seed: integer or None.
    """

    def __init__(self, gain=1.0, seed=None):
        self.gain = gain
        super().__init__(seed)

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal initializer needs at least a 2-D shape, received shape={shape}.")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        a = self._rng().standard_normal((max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))  # make the decomposition unique
        if rows < cols:
            q = q.T
        return (self.gain * q.reshape(shape)).astype(_dtype(dtype))

    def get_config(self):
        return {"gain": self.gain, **super().get_config()}


class STFT(Initializer):
    """The real or imaginary part of a windowed DFT, as a conv kernel of shape
    ``(frame_length, 1, fft_length // 2 + 1)`` (Keras 3's `keras.initializers.STFT`, made for the
    `STFTSpectrogram` layer): ``cos`` / ``sin`` of ``-2 pi t f / fft_length`` times the window, divided by
    its L2 norm (``scaling="density"``) or L1 norm (``"spectrum"``).

    Args:
        side: ``"real"`` or ``"imag"``.
        window: a `scipy.signal.get_window` name (``"hann"``), the window's values, or None.
        scaling: ``"density"``, ``"spectrum"`` or None.
        periodic: whether a named window is periodic (`scipy.signal.get_window`'s ``fftbins``).
    """

    def __init__(self, side="real", window="hann", scaling="density", periodic=False):
        if side not in ("real", "imag"):
            raise ValueError(f"STFT initializer expects side 'real' or 'imag', received side={side!r}.")
        if scaling is not None and scaling not in ("density", "spectrum"):
            raise ValueError(f"STFT initializer expects scaling None, 'density' or 'spectrum', received "
                             f"scaling={scaling!r}.")
        if isinstance(window, str):
            _scipy_window(window, 1, False)  # an unknown name fails here, as in Keras
        self.side, self.window, self.scaling, self.periodic = side, window, scaling, periodic

    def __call__(self, shape, dtype=None):
        dtype = _dtype(dtype)
        if len(shape) != 3:
            raise ValueError(f"STFT initializer expects a shape (frame_length, 1, fft_length // 2 + 1), "
                             f"received shape={tuple(shape)}.")
        frame_length, _, bins = (int(d) for d in shape)
        # in the weight's dtype, in Keras' order of operations, so float32 kernels round as Keras' do
        freq = np.arange(bins, dtype=dtype).reshape(1, 1, bins) / np.asarray((bins - 1) * 2, dtype)
        time = np.arange(frame_length, dtype=dtype).reshape(frame_length, 1, 1)
        args = (np.asarray(-2, dtype) * time) * freq * np.arccos(np.asarray(-1, dtype))
        kernel = (np.cos(args) if self.side == "real" else np.sin(args)).astype(dtype)
        if self.window is None:
            return kernel
        win = self.window
        if isinstance(win, str):
            win = _scipy_window(win, frame_length, self.periodic)
        win = np.asarray(win).astype(dtype)
        if win.shape != (frame_length,):
            raise ValueError(f"STFT initializer expects a window of shape ({frame_length},) (the frame length), "
                             f"received shape {win.shape}.")
        win = win.reshape(frame_length, 1, 1)
        scale = {"density": np.sqrt(np.sum(np.square(win))), "spectrum": np.sum(np.abs(win)),
                 None: np.asarray(1, dtype)}[self.scaling]
        return (kernel * win / scale).astype(dtype)

    def get_config(self):
        window = self.window.tolist() if isinstance(self.window, np.ndarray) else self.window
        return {"side": self.side, "window": window, "periodic": self.periodic, "scaling": self.scaling}


# Cosine-sum windows by their coefficients (a0, a1, a2): w[n] = a0 - a1 cos(2 pi n / M) + a2 cos(4 pi n / M)
_COSINE_WINDOWS = {"hann": (0.5, 0.5, 0.0), "hamming": (0.54, 0.46, 0.0), "blackman": (0.42, 0.5, 0.08)}


def _scipy_window(name: str, length: int, periodic: bool):
    """`scipy.signal.get_window(name, length, fftbins=periodic)`: the common windows (hann, hamming,
    blackman, boxcar, bartlett) computed here, so that scipy (not a dependency) is needed only for others."""
    if name in _COSINE_WINDOWS or name in ("boxcar", "bartlett"):
        if length == 1:
            return np.ones(1)
        m = length if periodic else length - 1  # a periodic window is the symmetric one of length + 1, cut
        n = np.arange(length, dtype=np.float64)
        if name == "boxcar":
            return np.ones(length)
        if name == "bartlett":
            return 1.0 - np.abs(2.0 * n / m - 1.0)
        a0, a1, a2 = _COSINE_WINDOWS[name]
        return a0 - a1 * np.cos(2.0 * np.pi * n / m) + a2 * np.cos(4.0 * np.pi * n / m)
    try:
        import scipy.signal
    except ImportError as e:
        raise ValueError(f"STFT window {name!r} needs scipy, which is not installed: pip install scipy, or use "
                         f"one of {sorted([*_COSINE_WINDOWS, 'boxcar', 'bartlett'])} or the window's values.") from e
    return scipy.signal.get_window(name, length, periodic)


_CLASSES = [Zeros, Ones, Constant, Identity, RandomNormal, RandomUniform, TruncatedNormal, VarianceScaling,
            GlorotUniform, GlorotNormal, HeNormal, HeUniform, LecunNormal, LecunUniform, Orthogonal, STFT]
ALL_OBJECTS: dict[str, type[Initializer]] = {}
for _cls in _CLASSES:
    ALL_OBJECTS[_cls.__name__] = _cls
    ALL_OBJECTS[naming.to_snake_case(_cls.__name__)] = _cls
ALL_OBJECTS.update({"normal": RandomNormal, "uniform": RandomUniform, "zero": Zeros, "one": Ones,
                    "IdentityInitializer": Identity, "OrthogonalInitializer": Orthogonal, "stft": STFT,
                    "STFTInitializer": STFT})

# Keras' lower-case aliases: `initializers.glorot_uniform(seed=1)` builds an instance.
zeros, ones, constant, identity = Zeros, Ones, Constant, Identity
random_normal, random_uniform, truncated_normal, variance_scaling = (RandomNormal, RandomUniform,
                                                                       TruncatedNormal, VarianceScaling)
glorot_uniform, glorot_normal, he_normal, he_uniform = GlorotUniform, GlorotNormal, HeNormal, HeUniform
lecun_normal, lecun_uniform, orthogonal = LecunNormal, LecunUniform, Orthogonal
IdentityInitializer, OrthogonalInitializer, STFTInitializer, stft = Identity, Orthogonal, STFT, STFT

# what `dir(keras.initializers)` lists in Keras 3.15 (the module's helpers and imports stay out of it)
_PUBLIC = (*(c.__name__ for c in _CLASSES), "Initializer", "IdentityInitializer", "OrthogonalInitializer",
           "STFTInitializer", "zeros", "ones", "constant", "identity", "random_normal", "random_uniform",
           "truncated_normal", "variance_scaling", "glorot_uniform", "glorot_normal", "he_normal", "he_uniform",
           "lecun_normal", "lecun_uniform", "orthogonal", "stft", "serialize", "deserialize", "get")


def __dir__():
    return sorted({*_PUBLIC, *(n for n in globals() if n.startswith("__"))})


def serialize(initializer) -> dict | str | None:
    """``{"class_name", "config"}`` of an initializer object (a function's name for functions)."""
    return serialize_keras_object(initializer)


def deserialize(config, custom_objects=None):
    """An initializer from `serialize`'s output."""
    return deserialize_instance(config, ALL_OBJECTS, custom_objects, kind="initializer")


def get(identifier):
    """An initializer from a name, config dict, class, instance, function or array (None -> None).

    Raises:
        ValueError: for an unknown name, listing the valid ones.
    """
    if identifier is None or isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, str):
        obj = named_instance(identifier, ALL_OBJECTS)
        if obj is None:
            valid = sorted(k for k in ALL_OBJECTS if k[0].islower())
            raise ValueError(f"Unknown initializer '{identifier}'. Valid names: {valid}.")
        return obj
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type):
        return identifier()
    if isinstance(identifier, (np.ndarray, list, tuple, int, float)):
        value = np.asarray(identifier)
        return lambda shape, dtype=None: np.broadcast_to(value, tuple(shape)).astype(_dtype(dtype))
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier {identifier!r} (of type "
                     f"{type(identifier).__name__}); pass a name such as 'glorot_uniform' or an "
                     "Initializer.")
