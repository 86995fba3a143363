"""TensorFlow's stateless random functions under `python -m flexflow_keras` (tf_compat.py's `mapped_call`
looks here): `tf.random.stateless_uniform`, `stateless_normal`, `stateless_truncated_normal` and
`stateless_categorical` with ``seed=[a, b]``, `tf.random.split` / `fold_in` (new seeds from a seed), and
`tf.random.Generator.from_seed(...)`'s `make_seeds` / int64 `uniform_full_int`, drawing TensorFlow's own values.

TensorFlow's CPU kernels draw from Philox-4x32-10; this module runs the same generator in NumPy. The seed
is scrambled into a key and a counter as TensorFlow's ``StatelessRandomGetKeyCounter`` does (one Philox
block of the seed's four 32-bit words under a fixed key gives the key and the counter's high half); each
block of the stream is then four 32-bit words, and the values are TensorFlow's conversions of them:
uniform floats from the mantissa bits (float16: 10 bits of one word, float32: 23 bits of one word,
float64: 52 bits of two words), bounded integers as ``minval + bits % (maxval - minval)`` (int64 from two
words), full-range integers as the words themselves, normals by Box-Muller in float32 (float16 rounds those) or float64, truncated normals by redrawing
Box-Muller pairs beyond two standard deviations, each group of outputs from its own region of 256 words,
and categorical samples by inverting the cumulative sum of ``exp(logit - max)`` with float64 uniforms taken
one after another along the rows. Uniforms and integers are bit-exact, and so are float64 normals; float32
normals agree with TensorFlow's to a few ulps, under 2e-6 absolute (NumPy's sin, cos and log, not TensorFlow's).

One difference remains: for large batches TensorFlow's categorical kernel splits the rows over its
threads, and each piece restarts the stream at an offset of its first row; this module always reads the
rows as one piece, which is TensorFlow's draw whenever it uses one thread (small logits). Beyond that the
samples follow the same distribution but are not TensorFlow's values. The 'threefry' algorithm, bfloat16
and unsigned integer draws are refused (RawTensorFlowError); symbolic shapes and seeds too
(the functions run eagerly, on arrays).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.ops.eager_tensor import eager
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.tf_convert import invalid as _invalid
from flexflow_keras.tf_convert import refuse

_MASK = np.uint64(0xFFFFFFFF)
_MULTIPLIERS = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
_SEED_KEY = (0x3EC8F720, 0x02461E29)  # TensorFlow's fixed key for scrambling the seed
_WORDS_PER_TRUNCATED_GROUP = 256  # TensorFlow's reserved words per output group (kReservedSamplesPerOutput)
_FLOATS = ("float16", "float32", "float64")


def _philox(counters: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Philox-4x32-10 of each row of `counters` ((n, 4) uint32) under `key`: (n, 4) uint32."""
    c = [counters[:, i].astype(np.uint64) for i in range(4)]
    k0, k1 = key
    for _ in range(10):
        p0, p1 = _MULTIPLIERS[0] * c[0], _MULTIPLIERS[1] * c[2]
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0)) & _MASK, p1 & _MASK,
             ((p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1)) & _MASK, p0 & _MASK]
        k0, k1 = (k0 + _KEY_STEPS[0]) & 0xFFFFFFFF, (k1 + _KEY_STEPS[1]) & 0xFFFFFFFF
    return np.stack(c, 1).astype(np.uint32)


def _words(n: int) -> np.ndarray:
    """The four 32-bit words of each 128-bit integer of `n` (an int array of Python ints): (len, 4) uint32."""
    return np.array([[(int(v) >> (32 * i)) & 0xFFFFFFFF for i in range(4)] for v in n], np.uint32).reshape(-1, 4)


class _Stream:
    """TensorFlow's Philox stream of one seed: its key and 128-bit starting counter."""

    def __init__(self, seed: tuple[int, int]):
        s0, s1 = (s & 0xFFFFFFFFFFFFFFFF for s in seed)
        mix = _philox(_words([s0 | (s1 << 64)]), _SEED_KEY)[0]
        self.key = (int(mix[0]), int(mix[1]))
        self.start = (int(mix[2]) << 64) | (int(mix[3]) << 96)

    def blocks(self, offsets) -> np.ndarray:
        """The 32-bit words of the blocks at `offsets` from the start, in order (uint32, 4 per block)."""
        counters = _words([(self.start + int(o)) % (1 << 128) for o in offsets])
        return _philox(counters, self.key).reshape(-1)

    def words(self, n: int) -> np.ndarray:
        """The first `n` words of the stream."""
        return self.blocks(range((n + 3) // 4))[:n]


class _CounterStream(_Stream):
    """The Philox stream of a stateful generator: its key and 128-bit counter as they are (no scrambling)."""

    def __init__(self, key: tuple[int, int], counter: int):  # noqa: D107 - _Stream's fields, given
        self.key, self.start = key, counter


def philox_words(key: tuple[int, int], first: int, blocks: int) -> np.ndarray:
    """The 32-bit words of `blocks` Philox-4x32-10 blocks under `key` from the 128-bit counter `first` (4 words
    a block, in order): the stream of TensorFlow's stateful PhiloxRandom (tf_random_init.py's candidate
    sampler)."""
    counters = _words([(first + i) % (1 << 128) for i in range(blocks)])
    return _philox(counters, key).reshape(-1)


def unit64(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """TensorFlow's Uint64ToDouble of word pairs (see `_unit64`)."""
    return _unit64(hi, lo)


def _unit32(bits: np.ndarray) -> np.ndarray:
    """TensorFlow's Uint32ToFloat: a float32 in [0, 1) from 23 mantissa bits."""
    return ((bits & np.uint32(0x7FFFFF)) | np.uint32(127 << 23)).view(np.float32) - np.float32(1.0)


def _unit64(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """TensorFlow's Uint64ToDouble: a float64 in [0, 1) from 52 bits of two words."""
    x = (hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)
    return ((x & np.uint64((1 << 52) - 1)) | np.uint64(1023 << 52)).view(np.float64) - 1.0


def _unit16(bits: np.ndarray) -> np.ndarray:
    """TensorFlow's Uint16ToHalf: a float16 in [0, 1) from 10 mantissa bits."""
    return ((bits & np.uint32(0x3FF)).astype(np.uint16) | np.uint16(15 << 10)).view(np.float16) - np.float16(1.0)


def _box_muller(u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TensorFlow's Box-Muller pair from two uniforms (u1 floored at 1e-7) in their dtype."""
    dtype = u1.dtype.type
    u1 = np.maximum(u1, dtype(1e-7))
    angle = dtype(2.0 * np.pi) * u2
    radius = np.sqrt(dtype(-2.0) * np.log(u1))
    return np.sin(angle) * radius, np.cos(angle) * radius


def _normal_pairs(bits: np.ndarray, double: bool) -> np.ndarray:
    """Normals from words, in stream order: 2 words per float32 value, 2 per float64 value (4 per pair)."""
    if double:
        f0, f1 = _box_muller(_unit64(bits[0::4], bits[1::4]), _unit64(bits[2::4], bits[3::4]))
    else:
        f0, f1 = _box_muller(_unit32(bits[0::2]), _unit32(bits[1::2]))
    return np.stack([f0, f1], 1).reshape(-1)


# --- arguments ---------------------------------------------------------------------------------------------
def _seed(call: str, seed) -> tuple[int, int]:
    if isinstance(seed, KerasTensor):
        refuse(call, "a symbolic seed has no value to draw from here;", "pass the seed as a list or an array.")
    arr = np.asarray(seed)
    if arr.dtype.kind not in "iu":
        _invalid(f"{call}: the seed must be int32 or int64, received dtype {arr.dtype}.")
    if arr.shape != (2,):
        _invalid(f"{call}: seed must have shape [2], not {list(arr.shape)}.")
    return int(arr[0]), int(arr[1])


def _shape(call: str, shape) -> tuple[int, ...]:
    arr = np.asarray(shape, dtype=object)
    if any(isinstance(s, KerasTensor) for s in arr.reshape(-1)) or isinstance(shape, KerasTensor):
        refuse(call, "a symbolic shape has no value to draw here;", "pass the shape as ints (it runs eagerly).")
    dims = tuple(int(s) for s in arr.reshape(-1))
    if any(d < 0 for d in dims):
        _invalid(f"{call}: the shape must be non-negative, received {list(dims)}.")
    return dims


def _dtype(call: str, dtype, allowed: tuple[str, ...]) -> str:
    name = getattr(dtype, "name", dtype)
    name = str(np.dtype(name)) if name != "bfloat16" else name
    if name in ("bfloat16", "uint32", "uint64") and name not in allowed:
        refuse(call, f"dtype {name} is not mapped under the runner;", f"use one of {', '.join(allowed)}.")
    if name not in allowed:
        raise ValueError(f"{call}: argument `dtype` got invalid value {name}. Accepted dtypes are "
                         f"{', '.join(allowed)}.")
    return name


def _alg(call: str, alg) -> None:
    if alg in (None, "auto_select", "philox", 0, 1) or getattr(alg, "name", None) in ("PHILOX", "AUTO_SELECT"):
        return
    refuse(call, f"alg={alg!r} is not mapped under the runner (only Philox, TensorFlow's CPU choice);",
           "drop the alg argument.")


# --- the functions -----------------------------------------------------------------------------------------
def _checked(call: str, shape, seed, dtype, allowed: tuple[str, ...], alg) -> tuple[str, tuple[int, ...], tuple]:
    """(dtype, dims, key) of a shaped stateless draw, each checked as TensorFlow checks it."""
    dtype = _dtype(call, dtype, allowed)
    dims, key = _shape(call, shape), _seed(call, seed)
    _alg(call, alg)
    return dtype, dims, key


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype="float32", name=None, alg="auto_select"):
    """`tf.random.stateless_uniform`: floats in [minval, maxval) (maxval 1 by default) or integers in
    [minval, maxval) (both needed), TensorFlow's values for the seed."""
    call = "tf.random.stateless_uniform"
    dtype, dims, key = _checked(call, shape, seed, dtype, _FLOATS + ("int32", "int64"), alg)
    return eager(_uniform_values(call, _Stream(key), dims, dtype, minval, maxval))


def _uniform_values(call: str, stream: _Stream, dims: tuple, dtype: str, minval, maxval) -> np.ndarray:
    """TensorFlow's uniform draw of `dims` from `stream` (the stateless and the stateful kernels alike)."""
    n = int(np.prod(dims))
    if dtype in ("int32", "int64"):
        if (minval is None) != (maxval is None):
            raise ValueError(f"For integer `dtype` argument {dtype}, argument `minval` and `maxval` must be both "
                             f"None or not None. Got `minval`={minval} and `maxval`={maxval}.")
        if minval is None:  # full range: the words themselves (int64: low word first), as TensorFlow's
            if dtype == "int32":
                return stream.words(n).astype(np.uint32).view(np.int32).reshape(dims)
            bits = stream.words(2 * n).astype(np.uint64)
            return (bits[0::2] | (bits[1::2] << np.uint64(32))).view(np.int64).reshape(dims)
        lo, hi = int(np.asarray(minval)), int(np.asarray(maxval))
        if lo >= hi:
            _invalid(f"{call}: Need minval < maxval, got {lo} >= {hi}")
        span = hi - lo
        if dtype == "int32":
            values = lo + (stream.words(n).astype(np.uint64) % np.uint64(span)).astype(np.int64)
        else:
            bits = stream.words(2 * n)
            wide = bits[0::2].astype(np.uint64) | (bits[1::2].astype(np.uint64) << np.uint64(32))
            values = lo + (wide % np.uint64(span)).astype(np.int64)
        return values.astype(dtype).reshape(dims)
    if dtype == "float64":
        bits = stream.words(2 * n)
        unit = _unit64(bits[0::2], bits[1::2])
    else:
        unit = (_unit16 if dtype == "float16" else _unit32)(stream.words(n))
    low = np.asarray(minval, dtype)
    high = np.asarray(1 if maxval is None else maxval, dtype)
    return np.asarray(unit.reshape(dims) * (high - low) + low, dtype)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype="float32", name=None, alg="auto_select"):
    """`tf.random.stateless_normal`: ``mean + stddev * N(0, 1)``, TensorFlow's values for the seed."""
    call = "tf.random.stateless_normal"
    dtype, dims, key = _checked(call, shape, seed, dtype, _FLOATS, alg)
    return eager(_normal_values(_Stream(key), dims, dtype, mean, stddev))


def _normal_values(stream: _Stream, dims: tuple, dtype: str, mean, stddev) -> np.ndarray:
    n = int(np.prod(dims))
    double = dtype == "float64"
    values = _normal_pairs(stream.words((2 if double else 1) * (n + n % 2)), double)[:n].astype(dtype)
    return np.asarray(values.reshape(dims) * np.asarray(stddev, dtype) + np.asarray(mean, dtype), dtype)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype="float32", name=None, alg="auto_select"):
    """`tf.random.stateless_truncated_normal`: normals redrawn beyond two standard deviations, scaled by
    `stddev` and shifted by `mean`, TensorFlow's values for the seed."""
    call = "tf.random.stateless_truncated_normal"
    dtype, dims, key = _checked(call, shape, seed, dtype, _FLOATS, alg)
    return eager(_truncated_values(_Stream(key), dims, dtype, mean, stddev))


def _truncated_values(stream: _Stream, dims: tuple, dtype: str, mean, stddev) -> np.ndarray:
    n = int(np.prod(dims))
    double = dtype == "float64"
    group = 2 if double else 4  # values per output group (TensorFlow's kResultElementCount)
    skip = group * _WORDS_PER_TRUNCATED_GROUP // 4  # blocks between the groups' regions
    values = np.empty(-(-n // group) * group, np.float64 if double else np.float32)
    for g in range(len(values) // group):
        blocks = 2
        while True:  # read more of the group's region until enough pairs fall inside the cutoff
            drawn = _normal_pairs(stream.blocks(range(g * skip, g * skip + blocks)), double)
            kept = drawn[np.abs(drawn) < 2.0]
            if kept.size >= group:
                break
            blocks *= 2
        values[g * group:(g + 1) * group] = kept[:group]
    out = values[:n].astype(dtype).reshape(dims)
    return np.asarray(out * np.asarray(stddev, dtype) + np.asarray(mean, dtype), dtype)


def stateless_categorical(logits, num_samples, seed, dtype="int64", name=None):
    """`tf.random.stateless_categorical`: `num_samples` class indices per row of the [batch, classes]
    logits, TensorFlow's values for the seed when TensorFlow draws the rows on one thread (module docstring)."""
    call = "tf.random.stateless_categorical"
    dtype = _dtype(call, dtype, ("int32", "int64"))
    if isinstance(logits, KerasTensor):
        refuse(call, "symbolic logits are not mapped under the runner (it runs eagerly);",
               "call it on arrays, or use keras.random.categorical in a layer.")
    key = _seed(call, seed)
    logits = np.asarray(logits)
    if logits.ndim != 2:
        _invalid(f"{call}: logits should be a matrix, got shape {list(logits.shape)}")
    samples = int(np.asarray(num_samples))
    if samples < 0:
        _invalid(f"{call}: num_samples should be nonnegative, got {samples}")
    batch, classes = logits.shape
    if batch and samples and not classes:
        _invalid(f"{call}: num_classes should be positive, got {classes}")
    bits = _Stream(key).words(2 * batch * samples)
    unit = _unit64(bits[0::2], bits[1::2]).reshape(batch, samples)
    out = np.zeros((batch, samples), np.int64)
    for b in range(batch):
        row = logits[b].astype(np.float64)
        finite = np.isfinite(row)
        top = row[finite].max() if finite.any() else float(np.finfo(logits.dtype).min)
        cdf = np.cumsum(np.where(finite, np.exp(row - top), 0.0))
        out[b] = np.searchsorted(cdf, unit[b] * cdf[-1], side="right")
    return eager(out.astype(dtype))


def _int_dtype(value) -> str:
    """The dtype TensorFlow converts an integer value to: Python ints and NumPy integer scalars, alone or in a
    list, are int32; arrays and tensors (a Dataset.map element) keep theirs."""
    items = value if isinstance(value, (list, tuple)) else [value]
    if all(isinstance(v, (int, np.integer)) for v in items):
        return "int32"
    return str(np.asarray(value).dtype)


def split(seed, num=2, alg="auto_select"):
    """`tf.random.split(seed, num)`: `num` new seeds, TensorFlow's full-range integers drawn with `seed`
    (shape [num, 2], the seed's dtype)."""
    return stateless_uniform([int(num), 2], seed, minval=None, maxval=None, dtype=_int_dtype(seed), alg=alg)


def fold_in(seed, data, alg="auto_select"):
    """`tf.random.fold_in(seed, data)`: the seed [a full-range integer drawn with `seed`, data]."""
    dtype = _int_dtype(data)
    first = stateless_uniform([], seed, minval=None, maxval=None, dtype=dtype, alg=alg)
    return eager(np.array([np.asarray(first), np.asarray(data)], dtype=dtype))


class Generator:
    """`tf.random.Generator.from_seed(seed, alg='philox')`: TensorFlow's stateful Philox generator, its state
    [counter low, counter high, key] as TensorFlow makes it from an integer seed. `normal`, `uniform`,
    `truncated_normal`, `uniform_full_int` and `make_seeds` draw TensorFlow's values (its kernels read the
    stream from the state's counter under its key, as the stateless ones read theirs, and advance the counter
    by 256 blocks per output); its other methods are refused by name."""

    _SKIP_PER_OUTPUT = 256

    def __init__(self, seed: int, alg="philox"):
        _alg("tf.random.Generator.from_seed", alg)
        value = int(np.asarray(seed)) & ((1 << 128) - 1)
        self._counter, self._key = value, 0  # TensorFlow puts an integer seed in the counter's low words

    @classmethod
    def from_seed(cls, seed, alg="philox"):
        return cls(seed, alg)

    @property
    def state(self):
        words = [self._counter & 0xFFFFFFFFFFFFFFFF, self._counter >> 64, self._key]
        return eager(np.array(words, dtype=np.uint64).view(np.int64))

    def _stream(self, dims: tuple) -> _CounterStream:
        """The stream of the next draw of `dims`; the state moves past it (256 blocks an output)."""
        stream = _CounterStream((self._key & 0xFFFFFFFF, (self._key >> 32) & 0xFFFFFFFF), self._counter)
        self._counter = (self._counter + self._SKIP_PER_OUTPUT * int(np.prod(dims))) % (1 << 128)
        return stream

    def normal(self, shape, mean=0.0, stddev=1.0, dtype="float32", name=None):
        """``mean + stddev * N(0, 1)`` from the generator's stream."""
        call = "tf.random.Generator.normal"
        dtype, dims = _dtype(call, dtype, _FLOATS), _shape(call, shape)
        return eager(_normal_values(self._stream(dims), dims, dtype, mean, stddev))

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype="float32", name=None):
        """Normals redrawn beyond two standard deviations, scaled and shifted, from the generator's stream."""
        call = "tf.random.Generator.truncated_normal"
        dtype, dims = _dtype(call, dtype, _FLOATS), _shape(call, shape)
        return eager(_truncated_values(self._stream(dims), dims, dtype, mean, stddev))

    def uniform(self, shape, minval=0, maxval=None, dtype="float32", name=None):
        """Floats in [minval, maxval) (maxval 1 by default), or integers in [minval, maxval) (both given;
        neither: full-range integers)."""
        call = "tf.random.Generator.uniform"
        dtype, dims = _dtype(call, dtype, _FLOATS + ("int32", "int64")), _shape(call, shape)
        return eager(_uniform_values(call, self._stream(dims), dims, dtype, minval, maxval))

    def uniform_full_int(self, shape, dtype="int64", name=None):
        """Full-range integers from the generator's stream (int64: low word first)."""
        call = "tf.random.Generator.uniform_full_int"
        dtype, dims = _dtype(call, dtype, ("int32", "int64")), _shape(call, shape)
        return eager(_uniform_values(call, self._stream(dims), dims, dtype, None, None))

    def make_seeds(self, count=1):
        """`count` seeds for the stateless functions, shape [2, count]: full-range int64 keys over zeros."""
        keys = np.asarray(self.uniform_full_int([int(count)]))
        return eager(np.stack([keys, np.zeros_like(keys)]))

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        refuse(f"tf.random.Generator.{name}", "only from_seed, state, normal, uniform, truncated_normal, "
               "uniform_full_int and make_seeds are mapped under the runner;", "draw with those, or with "
               "keras.random or the tf.random.stateless_* functions and a seed from make_seeds().")


CALLS = {"tf.random.split": split, "tf.random.Generator.from_seed": Generator.from_seed, "tf.random.fold_in": fold_in,
         "tf.random.experimental.stateless_split": split, "tf.random.experimental.stateless_fold_in": fold_in,
         "tf.random.stateless_uniform": stateless_uniform, "tf.random.stateless_normal": stateless_normal,
         "tf.random.stateless_truncated_normal": stateless_truncated_normal,
         "tf.random.stateless_categorical": stateless_categorical}
