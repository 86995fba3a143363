"""`keras.random`: random tensors, eager on shapes of ints and symbolic when the shape holds a symbolic
batch (``ops.shape(x)[0]``) or the input is a KerasTensor.

In a graph, a draw is a `RandomOp` whose values change every training step (its key mixes the fit's
seed, the step and the op's seed). The op's seed comes from `seed`: a `SeedGenerator` (each draw takes its
next value: different ops draw differently, reproducibly), None (the global generator) or an int (the
same values at every step, as Keras' stateless draws with an int seed). Eagerly, a SeedGenerator advances
on every call and an int seed always gives the same values.

Unseeded generators take their seed from the framework's generator (utils/rng.py), never from NumPy's global
state, which Keras and TensorFlow leave alone (a script's own ``np.random`` draws after ``keras.random.normal``
are those it gets there). The global generator starts again when that generator is re-seeded
(``keras.utils.set_random_seed``, ``tf.random.set_seed``), as Keras resets its global SeedGenerator.

Draws may come from several threads (a PyDataset's workers run ``__getitem__`` in a thread pool): one lock
makes advancing a generator, and making the global one, a single step, so no two calls share a seed.
"""

from __future__ import annotations

import threading

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import functional as F
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.eager_tensor import eager
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.ops.numpy_api import BatchDim, _shape_and_ref
from flexflow_keras.ops.random_ops import RandomOp
from flexflow_keras.utils import rng
from kernels import array_ops as karr
from kernels.dropout import mix64_int

__all__ = ["SeedGenerator", "normal", "uniform", "randint", "truncated_normal", "dropout", "shuffle", "categorical",
           "gamma", "beta", "binomial"]


class SeedGenerator:
    """A reproducible source of seeds for random ops (Keras 3's `keras.random.SeedGenerator`).

    Args:
        seed: an int (default: drawn from the framework's generator, utils/rng.py).
        name: accepted for Keras compatibility.
    """

    def __init__(self, seed=None, name=None, **kwargs):
        self.seed = rng.default_seed() if seed is None else int(seed)
        self.name = name or "seed_generator"
        self._count = 0

    def next(self) -> int:
        """The next 63-bit seed (advances the generator; thread-safe)."""
        with _LOCK:
            self._count += 1
            count = self._count
        return mix64_int(mix64_int(self.seed) ^ count) >> 1

    def get_config(self) -> dict:
        return {"seed": self.seed}


_global: dict = {"generator": None, "source": None}
# One lock for every generator (an instance's own would make SeedGenerators unpicklable): held only to
# advance a count or to swap the global generator, never while drawing values.
_LOCK = threading.RLock()


def _global_generator() -> SeedGenerator:
    """The generator of unseeded draws, made anew after the framework's generator was re-seeded."""
    with _LOCK:
        source = rng.generator()
        if _global["generator"] is None or _global["source"] is not source:
            _global["generator"] = SeedGenerator()  # its seed drawn from `source`
            _global["source"] = source
        return _global["generator"]


def _op_seed(seed) -> tuple[int, bool]:
    """(seed, fixed): fixed for an int seed (the same values each step)."""
    if isinstance(seed, SeedGenerator):
        return seed.next(), False
    if seed is None:
        return _global_generator().next(), False
    if isinstance(seed, int | np.integer):
        return mix64_int(int(seed)) >> 1, True
    raise TypeError(f"keras.random expects seed to be None, an int or a SeedGenerator, received "
                    f"{type(seed).__name__}.")


def _draw(dist: str, shape, params, dtype, seed, ref: KerasTensor | None = None):
    dims, batch_ref = _shape_and_ref(shape, f"random.{dist}")
    ref = batch_ref if batch_ref is not None else ref
    op_seed, fixed = _op_seed(seed)
    dtype = str(np.dtype(dtype or ("int32" if dist == "randint" else "float32")))
    if ref is None:
        out = np.empty(dims, dtype)
        key = op_seed if fixed else mix64_int(op_seed)
        karr.random_forward_cpu(dist, key, 0, tuple(float(p) for p in params), out)
        return eager(out)
    return apply_op(RandomOp(dist, dims, tuple(float(p) for p in params), dtype, op_seed, fixed), [ref])


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normally distributed values.

    Args:
        shape: ints, or ``(ops.shape(x)[0], ...)`` for one row per sample of a symbolic x.
        mean, stddev: the distribution's. dtype: float dtype (float32). seed: see the module docstring.
    """
    return _draw("normal", shape, (mean, stddev), dtype, seed)


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Uniform values in [minval, maxval) (arguments as `normal`)."""
    return _draw("uniform", shape, (minval, maxval), dtype, seed)


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Uniform integers in [minval, maxval) (arguments as `normal`)."""
    return _draw("randint", shape, (minval, maxval), dtype, seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal values redrawn when beyond two standard deviations (arguments as `normal`)."""
    return _draw("truncated_normal", shape, (mean, stddev), dtype, seed)


def dropout(inputs, rate, noise_shape=None, seed=None):
    """Zero each element with probability `rate` and scale the rest by ``1 / (1 - rate)`` (always, unlike the
    Dropout layer, which only drops while training)."""
    if not 0.0 <= float(rate) < 1.0:
        raise ValueError(f"random.dropout expects a rate in [0, 1), received rate={rate!r}.")
    sym = isinstance(inputs, KerasTensor)
    shape = tuple(inputs.shape) if noise_shape is None else tuple(noise_shape)
    if sym and shape and shape[0] is None:
        shape = (BatchDim(inputs),) + shape[1:]
    u = uniform(shape, dtype="float32", seed=seed)
    keep = F.cast(F.greater_equal(u, float(rate)), inputs.dtype if sym else "float32")
    return F.multiply(F.multiply(inputs, keep), 1.0 / (1.0 - float(rate)))


def shuffle(x, axis=0, seed=None):
    """x with its elements permuted along `axis` (a symbolic x: an axis >= 1, a new order every step,
    the same for every sample; eager: any axis)."""
    from flexflow_keras.ops import numpy_api

    if not isinstance(x, KerasTensor):
        arr = np.asarray(x)
        order = np.empty(arr.shape[axis], np.int64)
        op_seed, fixed = _op_seed(seed)
        karr.random_forward_cpu("permutation", op_seed if fixed else mix64_int(op_seed), 0, (0.0, 0.0),
                                order.reshape(1, -1))
        return eager(np.take(arr, order, axis=axis))
    nd = x.ndim
    if axis % nd == 0:
        raise ShapeError("random.shuffle along axis 0 of a symbolic tensor would mix samples across the batch; "
                         "shuffle the data before fit() (fit(shuffle=True) does), or give an axis >= 1.")
    n = x.shape[axis % nd]
    op_seed, _ = _op_seed(seed)
    order = apply_op(RandomOp("permutation", (1, n), (0.0, 0.0), "int32", op_seed), [])
    return numpy_api.take(x, numpy_api.reshape(order, (n,)), axis=axis)


# --- eager draws (sampling in a Python loop: text generation, augmentation) --------------------------------
def _generator(seed, who: str, *tensors) -> np.random.Generator:
    if any(isinstance(t, KerasTensor) for t in tensors):
        raise ShapeError(f"keras.random.{who} draws eagerly in flexflow_keras (on arrays, e.g. a model's predicted "
                         f"logits in a sampling loop); inside a model, use random.uniform or random.normal.")
    op_seed, fixed = _op_seed(seed)
    return np.random.default_rng(op_seed if fixed else mix64_int(op_seed))


def categorical(logits, num_samples, dtype="int32", seed=None):
    """`num_samples` class ids per row of `logits` (batch, classes), drawn with the probabilities
    softmax(logits) (Keras 3's keras.random.categorical; TensorFlow's tf.random.categorical)."""
    rng = _generator(seed, "categorical", logits)
    z = np.asarray(logits, np.float64)
    if z.ndim != 2:
        raise ShapeError(f"random.categorical expects logits of shape (batch, classes), received {z.shape}.")
    p = np.exp(z - z.max(axis=1, keepdims=True))
    cdf = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
    u = rng.random((z.shape[0], int(num_samples)))
    ids = np.minimum((u[:, :, None] > cdf[:, None, :]).sum(axis=2), z.shape[1] - 1)
    return eager(ids.astype(dtype))


def gamma(shape, alpha, dtype=None, seed=None):
    """Gamma-distributed values of shape `alpha` (scale 1)."""
    return eager(_generator(seed, "gamma", alpha).gamma(np.asarray(alpha, np.float64), size=tuple(shape)).astype(
        dtype or "float32"))


def beta(shape, alpha, beta, dtype=None, seed=None):  # noqa: A002 - Keras' argument name
    """Beta-distributed values."""
    rng = _generator(seed, "beta", alpha, beta)
    return eager(rng.beta(np.asarray(alpha, np.float64), np.asarray(beta, np.float64), size=tuple(shape)).astype(
        dtype or "float32"))


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    """Binomial counts of successes in `counts` trials of probability `probabilities`."""
    rng = _generator(seed, "binomial", counts, probabilities)
    return eager(rng.binomial(np.asarray(counts, np.int64), np.asarray(probabilities, np.float64),
                              size=tuple(shape)).astype(dtype or "float32"))
