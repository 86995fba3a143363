"""TensorFlow's random draws and initializer constructors that are not Keras' under their own names
(tf_compat.py's `mapped_call` looks in `CALLS`): `tf.random.gamma` (beta a rate, from this framework's
generator, which `tf.random.set_seed` seeds) and `tf.random_normal_initializer` / `random_uniform_initializer` /
`constant_initializer` / `zeros_initializer` / `ones_initializer` (keras.initializers objects), and
`tf.random.normal` / `uniform` / `categorical` with TensorFlow's signatures and defaults, drawn by keras.random,
and `tf.random.log_uniform_candidate_sampler` (word2vec's negative sampling): with an op seed TensorFlow's own
candidates (its kernel's Philox stream), without one TensorFlow's distribution from this framework's draws.

TensorFlow's op seed is not Keras' int seed: `tf.random.uniform(shape, seed=3)` is a stateful op whose
successive calls (eager, or steps of a traced function) give new values, reproducibly after
`tf.random.set_seed`; Keras' `seed=3` gives the same values at every call. So an int op seed here draws from
a `SeedGenerator(seed)` kept per op seed, and `tf.random.set_seed` (which re-creates the framework's
generator) starts those streams again.
"""

from __future__ import annotations

import numpy as np


def _random_normal_initializer(mean=0.0, stddev=0.05, seed=None):
    from flexflow_keras import initializers

    return initializers.RandomNormal(mean=mean, stddev=stddev, seed=seed)


def _random_uniform_initializer(minval=-0.05, maxval=0.05, seed=None):
    from flexflow_keras import initializers

    return initializers.RandomUniform(minval=minval, maxval=maxval, seed=seed)


def _constant_initializer(value=0):
    from flexflow_keras import initializers

    return initializers.Constant(value)


def _tf_gamma(shape, alpha, beta=None, dtype="float32", seed=None, name=None):
    """`tf.random.gamma`: samples of shape ``shape + broadcast(alpha, beta).shape``; beta is a rate (TensorFlow's
    inverse scale), drawn from this framework's generator (`tf.random.set_seed` seeds it)."""
    from flexflow_keras import random

    alpha = np.asarray(alpha, np.float64)
    rate = np.ones_like(alpha) if beta is None else np.asarray(beta, np.float64)
    alpha, rate = np.broadcast_arrays(alpha, rate)
    full = tuple(int(s) for s in np.asarray(shape).reshape(-1)) + alpha.shape
    draws = np.asarray(random.gamma(full, np.broadcast_to(alpha, full), dtype="float64", seed=seed))
    return _random_result(draws / np.broadcast_to(rate, full), dtype)


_op_streams: dict = {"generator": None, "by_seed": {}}


def _tf_seed(seed):
    """keras.random's seed for TensorFlow's op seed: None stays None (the global generator), an int takes its
    own SeedGenerator, which advances at each call as TensorFlow's stateful op does."""
    from flexflow_keras import random
    from flexflow_keras.utils import rng

    if seed is None or isinstance(seed, random.SeedGenerator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"TensorFlow's random ops take seed as None or an integer, received {seed!r} "
                        f"(of type {type(seed).__name__}).")
    if _op_streams["generator"] is not rng.generator():  # tf.random.set_seed since: the streams start again
        _op_streams["generator"], _op_streams["by_seed"] = rng.generator(), {}
    return _op_streams["by_seed"].setdefault(int(seed), random.SeedGenerator(int(seed)))


def _tf_normal(shape, mean=0.0, stddev=1.0, dtype="float32", seed=None, name=None):
    """`tf.random.normal`: float32 unless `dtype` says otherwise (not Keras' floatx)."""
    from flexflow_keras import random

    if seed is None:
        _eager_seeds(None)  # TensorFlow's op seed draw, which later seeded ops (tf_shuffle) follow
    return random.normal(shape, mean=mean, stddev=stddev, dtype=dtype, seed=_tf_seed(seed))


def _tf_uniform(shape, minval=0, maxval=None, dtype="float32", seed=None, name=None):
    """`tf.random.uniform`: values in [minval, maxval); maxval None is 1 for floats and must be given for
    integer dtypes (TensorFlow's ValueError)."""
    from flexflow_keras import random

    if maxval is None:
        if np.issubdtype(np.dtype(dtype), np.integer):
            raise ValueError(f"tf.random.uniform: must specify maxval for integer dtype {np.dtype(dtype).name} "
                             f"(integers are drawn from [minval, maxval)); pass maxval=, e.g. "
                             f"tf.random.uniform(shape, 0, 10, dtype=tf.int32).")
        maxval = 1
    if seed is None:
        _eager_seeds(None)  # TensorFlow's op seed draw, which later seeded ops (tf_shuffle) follow
    return random.uniform(shape, minval=minval, maxval=maxval, dtype=dtype, seed=_tf_seed(seed))


def _tf_categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """`tf.random.categorical`: int64 class ids unless `dtype` says otherwise (keras.random's default is
    int32)."""
    from flexflow_keras import random

    return random.categorical(logits, num_samples, dtype="int64" if dtype is None else dtype,
                              seed=_tf_seed(seed))


_DEFAULT_GRAPH_SEED = 87654321  # TensorFlow's seed beside an op seed when no global seed is set
_MAXINT32 = 2**31 - 1
_kernels: dict = {"global": None, "streams": {}, "op_seeds": None}


def note_global_seed(seed) -> None:
    """`tf.random.set_seed(seed)` (tf_setup.py): TensorFlow's seeded kernels start their streams again, and
    its eager op seeds (for ops given none) are drawn again from ``random.Random(seed)``."""
    import random as _py_random

    _kernels["global"], _kernels["streams"] = (None if seed is None else int(seed)), {}
    _kernels["op_seeds"] = None if seed is None else _py_random.Random(int(seed))


def _eager_seeds(seed):
    """TensorFlow's (seed, seed2) of an eager random op (random_seed.get_seed): with a global seed, an op
    given no seed takes the next of context.internal_operation_seed()'s draws; without one, an op seed
    pairs with the default graph seed; neither: None (TensorFlow's nondeterministic draw)."""
    glob = _kernels["global"]
    if glob is None:
        return None if seed is None else (_DEFAULT_GRAPH_SEED, int(seed) % _MAXINT32)
    if seed is None:
        seed = _kernels["op_seeds"].randint(0, _MAXINT32)
    seeds = (glob % _MAXINT32, int(seed) % _MAXINT32)
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


def tf_shuffle(value, seed=None, name=None):
    """`tf.random.shuffle(value, seed)`: value's rows in a random order. With tf.random.set_seed or an op
    seed, TensorFlow's order: its RandomShuffle kernel swaps row i with row ``i + word % (n - i)`` for the
    words of its Philox stream (key from seed, counter from seed2), which it keeps per seeds and dtype and
    advances by ceil((n - 1) / 4) blocks a call, as TensorFlow's eager kernel cache keeps it. Without either,
    this framework's generator (TensorFlow's order is not reproducible then); symbolic values, keras.random."""
    from flexflow_keras import random
    from flexflow_keras.ops.eager_tensor import eager
    from flexflow_keras.ops.graph import KerasTensor
    from flexflow_keras.tf_stateless_random import philox_words

    if isinstance(value, KerasTensor):
        return random.shuffle(value, axis=0, seed=seed)
    seeds = _eager_seeds(seed)
    arr = np.asarray(value)
    if seeds is None or arr.ndim == 0:
        return random.shuffle(value, axis=0, seed=seed)
    n = arr.shape[0]
    if n <= 1:  # TensorFlow copies it without drawing
        return eager(arr.copy())
    stream = _kernels["streams"].setdefault((seeds, ("RandomShuffle", str(arr.dtype))), _KernelStream(*seeds))
    blocks = (n - 1 + 3) // 4
    words = philox_words(stream.key, stream.counter, blocks).astype(np.int64)
    stream.counter = (stream.counter + blocks) % (1 << 128)
    order = np.arange(n)
    for i in range(n - 1):
        j = i + int(words[i]) % (n - i)
        order[i], order[j] = order[j], order[i]
    return eager(arr[order])


class _KernelStream:
    """A seeded candidate-sampler kernel's Philox stream, as TensorFlow's GuardedPhiloxRandom keeps it: key from
    `seed`, counter from `seed2`, and each call reserves 2048 * num_sampled words (SimplePhilox reads on past
    the reservation when rejections need more, as TensorFlow's does)."""

    def __init__(self, seed: int, seed2: int):
        self.key = (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)
        self.counter = (seed2 & 0xFFFFFFFFFFFFFFFF) << 64

    def doubles(self, num_sampled: int):
        """TensorFlow's RandDouble values of one call, lazily (two words each)."""
        from flexflow_keras.tf_stateless_random import philox_words, unit64

        block = self.counter
        self.counter = (self.counter + (2048 * num_sampled + 3) // 4) % (1 << 128)
        while True:
            words = philox_words(self.key, block, 64)
            block += 64
            yield from unit64(words[0::2], words[1::2]).tolist()


def _candidate_draws(seed, attrs: tuple, num_sampled: int, range_max: int):
    """Uniform [0, 1) draws for one sampler call: TensorFlow's own for an integer op seed (its kernel's
    stream, kept per seed and attributes as TensorFlow's eager kernel cache keeps it), else this framework's."""
    from flexflow_keras import random

    if seed is None:
        gen = _tf_seed(None)
        while True:
            yield from np.asarray(random.uniform((4 * num_sampled,), dtype="float64", seed=gen)).tolist()
    seeds = (_DEFAULT_GRAPH_SEED if _kernels["global"] is None else _kernels["global"] % (1 << 63), int(seed))
    if seeds == (0, 0):
        seeds = (0, 2**31 - 1)
    stream = _kernels["streams"].setdefault((seeds, attrs), _KernelStream(*seeds))
    yield from stream.doubles(num_sampled)


def _log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None):
    """`tf.random.log_uniform_candidate_sampler` (word2vec's negative sampling), as TensorFlow's kernel: each
    class is ``int(exp(u * log(range_max + 1))) - 1`` for a uniform u, so P(c) = log((c + 2) / (c + 1)) /
    log(range_max + 1); distinct ones with `unique` (draws repeat until `num_sampled` differ); the true classes
    are not excluded. Returns (sampled_candidates int64 (num_sampled,), true_expected_count float32 like
    true_classes, sampled_expected_count float32 (num_sampled,)), the counts p * num_sampled, or with `unique`
    -expm1(tries * log1p(-p)) after `tries` draws. With an integer seed the draws are TensorFlow's (its Philox
    stream for the op's seeds, advancing at each call); without one they are this framework's."""
    who = "tf.random.log_uniform_candidate_sampler"
    true = np.asarray(true_classes)
    num_sampled, range_max, num_true = int(num_sampled), int(range_max), int(num_true)
    if true.ndim != 2 or true.shape[1] != num_true:
        raise ValueError(f"{who}: true_classes must be a matrix of shape (batch, num_true={num_true}), received "
                         f"shape {true.shape}.")
    if num_sampled < 1 or range_max < 1 or (unique and num_sampled > range_max):
        raise ValueError(f"{who}: needs num_sampled >= 1 and range_max >= 1, and with unique=True num_sampled <= "
                         f"range_max (TensorFlow: 'Sampler's range is too small'); received num_sampled="
                         f"{num_sampled}, range_max={range_max}.")
    if true.size and (true.min() < 0 or true.max() >= range_max):
        from flexflow_keras.tf_constants import InvalidArgumentError

        bad = int(true.max() if true.max() >= range_max else true.min())
        raise InvalidArgumentError(f"{who}: true_classes out of range [0, {range_max}), received {bad}.")
    log_range = float(np.log(float(range_max + 1)))
    draws = _candidate_draws(seed, ("log_uniform", num_true, num_sampled, bool(unique), range_max), num_sampled,
                             range_max)
    picked, seen, tries = [], set(), 0
    while len(picked) < num_sampled:
        tries += 1
        c = (int(np.exp(next(draws) * log_range)) - 1) % range_max
        if unique and c in seen:
            continue
        seen.add(c)
        picked.append(c)

    def expected(c):
        p = (np.log((np.asarray(c, np.float64) + 2.0) / (np.asarray(c, np.float64) + 1.0)) / log_range)
        p = p.astype(np.float32)
        if not unique or tries == num_sampled:
            return p * np.float32(num_sampled)
        return -np.expm1(np.float32(tries) * np.log1p(-p))  # float32 throughout, as TensorFlow's helper

    sampled = np.asarray(picked, np.int64)
    return (_random_result(sampled, "int64"), _random_result(expected(true), "float32"),
            _random_result(expected(sampled), "float32"))


def _random_result(values, dtype):
    from flexflow_keras.ops.eager_tensor import eager

    return eager(np.asarray(values).astype(str(dtype)))


CALLS = {
    "tf.random_normal_initializer": _random_normal_initializer,
    "tf.random_uniform_initializer": _random_uniform_initializer,
    "tf.constant_initializer": _constant_initializer,
    "tf.zeros_initializer": lambda: _constant_initializer(0.0),
    "tf.ones_initializer": lambda: _constant_initializer(1.0),
    "tf.random.gamma": lambda *a, **k: _tf_gamma(*a, **k),
    "tf.random.normal": _tf_normal,
    "tf.random.uniform": _tf_uniform,
    "tf.random.categorical": _tf_categorical,
    "tf.random.log_uniform_candidate_sampler": _log_uniform_candidate_sampler,
    "tf.compat.v1.nn.log_uniform_candidate_sampler": _log_uniform_candidate_sampler,
}
