"""TensorFlow's math and `tf.nn` functions that public tf.keras scripts call in custom losses, metrics and
layers, run as `keras.ops` under `python -m flexflow_keras` (tf_compat.py's `mapped_call` looks here).

Each takes TensorFlow's argument names and defaults (`tf.cumsum` scans axis 0, `tf.math.count_nonzero`
counts in int64, `tf.norm` is the Euclidean norm of all of x) and runs eagerly and on symbolic tensors in a
model, composed from keras.ops functions (so a GradientTape sees it). An argument only TensorFlow's function
has is left out of the signature, so the runner refuses it with a `RawTensorFlowError`.

Mapped: `tf.cumsum` / `tf.math.cumsum` and `tf.math.cumprod` (exclusive, reverse), `tf.math.count_nonzero`,
`tf.reduce_any` / `reduce_all` / `reduce_logsumexp` (and under tf.math), `tf.math.is_nan` / `is_inf` /
`is_finite`, `tf.math.divide_no_nan`, `tf.math.rsqrt`, `tf.round`, `tf.norm` / `tf.linalg.norm`,
`tf.clip_by_norm`, `tf.math.log_sigmoid`, `tf.math.atan2`, `atan`, `asin`, `acos`, `sinh`, `cosh`, `asinh`,
`acosh`, `atanh` (each as tf.NAME and tf.math.NAME, as TensorFlow), `tf.math.expm1`, `erfinv`, `rint`,
`reduce_euclidean_norm`, `tf.scalar_mul`, `tf.realdiv`, `tf.math.logical_xor`,
`tf.nn.l2_loss`, `tf.nn.bias_add`, `tf.nn.softmax_cross_entropy_with_logits`,
`tf.nn.sparse_softmax_cross_entropy_with_logits`, `tf.nn.dropout`, `tf.random.truncated_normal`,
`tf.random.shuffle`, `tf.nn.batch_normalization`, `tf.clip_by_global_norm` (``(clipped list, global
norm)``, for custom training loops) and `tf.linalg.global_norm`; `tf.math.xlogy`, `xdivy`, `lgamma`,
`digamma`, `erfc` and `tf.math.squared_difference` / `tf.squared_difference` (floating-point, computed in
float64 from keras.ops, so a GradientTape differentiates them).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.tf_convert import invalid, refuse
from flexflow_keras.tf_convert import ops as _ops
from flexflow_keras.tf_convert import tensor as _tensor


def _refuse(call: str, why: str):
    refuse(call, why, "Use the keras.ops function it names, or run the script with TensorFlow itself.")


def _ndim(x) -> int:
    return x.ndim if isinstance(x, KerasTensor) else np.ndim(x)


def _shift(x, axis: int, fill: float):
    """x moved one place along `axis` (the last entry dropped, `fill` first): an exclusive scan's input."""
    ops = _ops()
    nd = _ndim(x)
    axis = axis % nd
    widths = [(0, 0)] * nd
    widths[axis] = (1, 0)
    padded = ops.pad(x, widths, constant_values=fill)
    return padded[(slice(None),) * axis + (slice(None, -1),)]


def _scan(fn: str, fill: float):
    def scan(x, axis=0, exclusive=False, reverse=False, name=None):
        ops = _ops()
        x = ops.convert_to_tensor(_tensor(x)) if not isinstance(x, KerasTensor) else x
        axis = int(axis)
        if reverse:
            x = ops.flip(x, axis=axis)
        if exclusive:
            x = _shift(x, axis, fill)
        out = getattr(ops, fn)(x, axis=axis)
        return ops.flip(out, axis=axis) if reverse else out

    scan.__name__ = scan.__qualname__ = fn
    scan.__doc__ = (f"`tf.math.{fn}(x, axis=0, exclusive=False, reverse=False)`: keras.ops.{fn} along TensorFlow's "
                    f"default axis 0; `exclusive` leaves out each entry itself, `reverse` scans from the end.")
    return scan


def count_nonzero(input, axis=None, keepdims=None, dtype="int64", name=None):  # noqa: A002 (TensorFlow's names)
    """`tf.math.count_nonzero`: the number of non-zero entries (over `axis`, all by default), in `dtype`
    (int64)."""
    ops = _ops()
    input = _tensor(input)  # noqa: A001 (TensorFlow's argument name)
    nonzero = ops.cast(ops.not_equal(input, ops.zeros_like(input)), str(np.dtype(dtype)))
    return ops.sum(nonzero, axis=axis, keepdims=bool(keepdims))


def _reduction(fn: str):
    def reduce(input_tensor, axis=None, keepdims=False, name=None):
        return getattr(_ops(), fn)(_tensor(input_tensor), axis=axis, keepdims=keepdims)

    reduce.__name__ = reduce.__qualname__ = f"reduce_{fn}"
    reduce.__doc__ = f"`tf.reduce_{fn}(input_tensor, axis=None, keepdims=False)`; keras.ops.{fn}."
    return reduce


def _unary(fn: str, tf_name: str):
    def unary(x, name=None):
        return getattr(_ops(), fn)(_tensor(x))

    unary.__name__ = unary.__qualname__ = tf_name
    unary.__doc__ = f"`tf.math.{tf_name}(x)`; keras.ops.{fn}."
    return unary


def divide_no_nan(x, y, name=None):
    """`tf.math.divide_no_nan(x, y)`: x / y, 0 where y is 0."""
    return _ops().divide_no_nan(_tensor(x), _tensor(y))


def atan2(y, x, name=None):
    """`tf.math.atan2(y, x)`: the angle of (x, y); keras.ops.arctan2."""
    return _ops().arctan2(_tensor(y), _tensor(x))


def logical_xor(x, y, name="LogicalXor"):
    """`tf.math.logical_xor(x, y)`."""
    return _ops().logical_xor(_tensor(x), _tensor(y))


def round_(x, name=None):
    """`tf.round(x)`: half to even; integers are their own rounding (returned as they are)."""
    x = _tensor(x)
    if isinstance(x, KerasTensor):
        return x if np.dtype(str(x.dtype)).kind in "iub" else _ops().round(x)
    x = _ops().convert_to_tensor(x)
    return x if np.asarray(x).dtype.kind in "iub" else _ops().round(x)


def _matrix_norm(tensor, ord, axes: tuple, keepdims: bool):  # noqa: A002 (TensorFlow's name)
    """TensorFlow's matrix 1-norm (largest column sum of |x|: summed over axes[0], the largest over axes[1])
    or inf-norm (largest row sum: summed over axes[1], the largest over axes[0])."""
    ops = _ops()
    nd = _ndim(tensor)
    rows, cols = (int(a) % nd for a in axes)
    if rows == cols:
        _refuse("tf.norm", f"expects two different axes for a matrix norm, received axis={list(axes)}.")
    summed, largest = (rows, cols) if ord == 1 else (cols, rows)
    out = ops.max(ops.sum(ops.abs(tensor), axis=summed, keepdims=True), axis=largest, keepdims=True)
    return out if keepdims else ops.squeeze(out, axis=(rows, cols))


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002 (TensorFlow's names)
    """`tf.norm` / `tf.linalg.norm`: the Euclidean (or 'fro') norm of all of x by default, or over `axis` (an
    int: a vector norm of order `ord`; a pair: a matrix norm, 'euclidean' / 'fro' / 1 (the largest column sum
    of |x|) / inf (the largest row sum))."""
    ops = _ops()
    tensor = _tensor(tensor)
    keep = bool(keepdims)
    if isinstance(axis, list | tuple) and len(axis) == 1:
        axis = axis[0]
    if isinstance(axis, list | tuple) and len(axis) == 2 and not isinstance(ord, str) and ord in (1, np.inf):
        return _matrix_norm(tensor, ord, tuple(axis), keep)
    if ord in ("euclidean", "fro"):
        if ord == "fro" and not (axis is None or isinstance(axis, list | tuple)):
            _refuse("tf.norm", "takes ord='fro' over a pair of axes (or axis=None), as TensorFlow.")
        axes = None if axis is None else tuple(axis) if isinstance(axis, list | tuple) else int(axis)
        return ops.sqrt(ops.sum(ops.square(tensor), axis=axes, keepdims=keep))
    if axis is None:
        flat = ops.reshape(tensor, (-1,))
        out = ops.norm(flat, ord=ord)
        return ops.reshape(out, (1,) * _ndim(tensor)) if keep else out
    return ops.norm(tensor, ord=ord, axis=tuple(axis) if isinstance(axis, list | tuple) else int(axis), keepdims=keep)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """`tf.clip_by_norm(t, clip_norm, axes=None)`: t scaled to L2 norm at most `clip_norm` (over `axes`,
    all of t by default): ``t * clip_norm / max(norm, clip_norm)``."""
    ops = _ops()
    t = _tensor(t)
    l2 = ops.sqrt(ops.sum(ops.square(t), axis=None if axes is None else tuple(np.asarray(axes).reshape(-1).tolist()),
                          keepdims=True))
    return ops.divide(ops.multiply(t, clip_norm), ops.maximum(l2, clip_norm))


def l2_loss(t, name=None):
    """`tf.nn.l2_loss(t)`: ``sum(t ** 2) / 2``."""
    return _ops().multiply(_ops().sum(_ops().square(_tensor(t))), 0.5)


def bias_add(value, bias, data_format=None, name=None):
    """`tf.nn.bias_add(value, bias, data_format)`: `bias` added along the channels, last ("N...C", the
    default) or second ("NC...")."""
    ops = _ops()
    value, bias = _tensor(value), _tensor(bias)
    if data_format is not None and str(data_format).startswith("NC") and _ndim(value) > 2:
        bias = ops.reshape(bias, (-1,) + (1,) * (_ndim(value) - 2))
    return ops.add(value, bias)


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """`tf.nn.softmax_cross_entropy_with_logits(labels, logits, axis=-1)`: per-row cross-entropy of
    probability `labels` and softmax(logits); keras.ops.categorical_crossentropy from logits."""
    ops = _ops()
    labels, logits = _tensor(labels), _tensor(logits)
    if int(axis) not in (-1, _ndim(logits) - 1):  # the class axis last, as keras.ops' loss takes it
        labels, logits = ops.moveaxis(labels, int(axis), -1), ops.moveaxis(logits, int(axis), -1)
    return ops.categorical_crossentropy(labels, logits, from_logits=True)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """`tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)`: per-row cross-entropy of integer
    `labels` and softmax(logits); keras.ops.sparse_categorical_crossentropy from logits."""
    return _ops().sparse_categorical_crossentropy(_tensor(labels), _tensor(logits), from_logits=True)


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """`tf.nn.dropout(x, rate)`: each entry zeroed with probability `rate`, the rest scaled by 1 / (1 - rate),
    on every call (no training flag, as TensorFlow's); keras.random.dropout, seeded by `tf.random.set_seed`."""
    from flexflow_keras import random

    return random.dropout(x, rate, noise_shape=noise_shape, seed=seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype="float32", seed=None, name=None):
    """`tf.random.truncated_normal`: normal values redrawn beyond two standard deviations."""
    from flexflow_keras import random

    return random.truncated_normal(shape, mean=mean, stddev=stddev, dtype=dtype, seed=seed)


def shuffle(value, seed=None, name=None):
    """`tf.random.shuffle(value)`: value's rows in a random order (axis 0); tf_random_init.tf_shuffle."""
    from flexflow_keras.tf_random_init import tf_shuffle

    return tf_shuffle(value, seed=seed)


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """`tf.nn.batch_normalization(x, mean, variance, offset, scale, variance_epsilon)`: ``(x - mean) *
    scale / sqrt(variance + variance_epsilon) + offset`` (offset and scale may be None), with the statistics
    given (tf.nn.moments computes them)."""
    ops = _ops()
    x = _tensor(x)
    factor = ops.rsqrt(ops.add(_tensor(variance), variance_epsilon))
    if scale is not None:
        factor = ops.multiply(factor, _tensor(scale))
    shift = ops.negative(ops.multiply(_tensor(mean), factor))
    if offset is not None:
        shift = ops.add(shift, _tensor(offset))
    return ops.add(ops.multiply(x, factor), shift)


def _tensor_list(call: str, t_list) -> list:
    if isinstance(t_list, KerasTensor | np.ndarray) or hasattr(t_list, "value") or not hasattr(t_list, "__iter__"):
        raise TypeError(f"{call} expects t_list to be a list of tensors (such as the gradients from "
                        f"tape.gradient), received {type(t_list).__name__}; wrap one tensor in a list.")
    return list(t_list)


def global_norm(t_list, name=None):
    """`tf.linalg.global_norm(t_list)`: ``sqrt(sum of every entry squared)`` over the tensors of the list
    (None entries are skipped), float32 for float32 tensors."""
    ops = _ops()
    squares = [ops.sum(ops.square(_tensor(t))) for t in _tensor_list("tf.linalg.global_norm", t_list)
               if t is not None]
    if not squares:
        return ops.convert_to_tensor(np.float32(0.0))
    total = squares[0]
    for s in squares[1:]:
        total = ops.add(total, ops.cast(s, str(np.dtype(total.dtype))))
    return ops.sqrt(total)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """`tf.clip_by_global_norm(t_list, clip_norm, use_norm=None)`: ``(clipped_list, global_norm)``; each
    tensor times ``clip_norm / max(global_norm, clip_norm)`` (None entries stay None), the global norm being
    `use_norm` when given. An infinite or NaN norm makes every entry NaN, as TensorFlow's, so a custom loop
    notices. Example::

        grads, _ = tf.clip_by_global_norm(tape.gradient(loss, model.trainable_variables), 5.0)
    """
    ops = _ops()
    tensors = _tensor_list("tf.clip_by_global_norm", t_list)
    norm = global_norm(tensors) if use_norm is None else _tensor(use_norm)
    clip = ops.cast(_tensor(clip_norm), str(np.dtype(norm.dtype)))
    scale = ops.multiply(clip, ops.minimum(ops.reciprocal(norm), ops.reciprocal(clip)))
    scale = ops.add(scale, ops.subtract(norm, norm))  # NaN where the norm is not finite
    clipped = [None if t is None else ops.multiply(_tensor(t), ops.cast(scale, str(np.dtype(_tensor(t).dtype))))
               for t in tensors]
    return clipped, norm


def _floats(who: str, *xs):
    """xs as tensors of TensorFlow's floating-point dtypes (one dtype); an integer is its InvalidArgumentError."""
    xs = [_tensor(x) for x in xs]
    dtypes = {str(np.dtype(str(getattr(x, "dtype", None) or np.asarray(x).dtype))) for x in xs}
    bad = sorted(d for d in dtypes if np.dtype(d).kind != "f")
    if bad:
        invalid(f"Value for attr 'T' of {bad[0]} is not in the list of allowed values: bfloat16, half, float, "
                f"double [Op:{who}] tf.math.{who.lower()} takes floating-point tensors: cast them first, e.g. "
                f"tf.cast(x, tf.float32).")
    if len(dtypes) > 1:
        invalid(f"cannot compute {who} as its inputs have dtypes {sorted(dtypes)}: cast them to one dtype first.")
    return xs, dtypes.pop()


def _x_op(who: str, fn):
    """`tf.math.xlogy` / `xdivy`: 0 where x is 0 (whatever y is), its gradients 0 there too."""
    def op(x, y, name=None):
        ops = _ops()
        (x, y), _ = _floats(who, x, y)
        zero = ops.equal(x, 0)
        safe_y = ops.where(zero, ops.ones_like(y), y)
        return ops.where(zero, ops.zeros_like(ops.add(x, y)), fn(ops, x, safe_y))

    op.__name__ = op.__qualname__ = who.lower()
    return op


xlogy = _x_op("Xlogy", lambda ops, x, y: ops.multiply(x, ops.log(y)))
xlogy.__doc__ = "`tf.math.xlogy(x, y)`: ``x * log(y)``, 0 where x is 0."
xdivy = _x_op("Xdivy", lambda ops, x, y: ops.divide(x, y))
xdivy.__doc__ = "`tf.math.xdivy(x, y)`: ``x / y``, 0 where x is 0."


def _special(who: str, fn):
    """A special function of a float tensor, computed in float64 by `fn(ops, x64)` and returned in x's dtype."""
    def special(x, name=None):
        ops = _ops()
        (x,), dtype = _floats(who, x)
        return ops.cast(fn(ops, ops.cast(x, "float64")), dtype)

    special.__name__ = special.__qualname__ = who.lower()
    return special


def _reflected(ops, x):
    """(x < 0.5, max(x, 1 - x), x where reflected else 0.25): the arguments of the reflection formulas, each
    branch's input kept where its formula is finite so that neither gives a NaN gradient."""
    reflect = ops.less(x, 0.5)
    return reflect, ops.where(reflect, ops.subtract(1.0, x), x), ops.where(reflect, x, ops.full_like(x, 0.25))


def _lgamma(ops, x):
    """log|Gamma(x)|: Stirling's series at w = z + 6 >= 6.5 (error below 1e-12), less log(z (z+1) ... (z+5));
    x < 0.5 by the reflection ``log(pi / |sin(pi x)|) - lgamma(1 - x)``; +inf at the poles and at +-inf."""
    reflect, z, xs = _reflected(ops, x)
    w = ops.add(z, 6.0)
    r = ops.reciprocal(w)
    r2 = ops.square(r)
    series = ops.multiply(r, 1 / 12 + r2 * (-1 / 360 + r2 * (1 / 1260 + r2 * (-1 / 1680 + r2 / 1188))))
    log_w = ops.log(w)
    out = ops.add(ops.subtract(ops.multiply(ops.subtract(w, 0.5), log_w), w), 0.5 * np.log(2 * np.pi) + series)
    for k in range(6):
        out = ops.subtract(out, ops.log(ops.add(z, float(k))))
    sine = ops.abs(ops.sin(ops.multiply(xs, np.pi)))
    out = ops.where(reflect, ops.subtract(ops.subtract(np.log(np.pi), ops.log(sine)), out), out)
    pole = ops.logical_or(ops.isinf(x), ops.logical_and(ops.less_equal(x, 0.0), ops.equal(x, ops.floor(x))))
    return ops.where(pole, ops.full_like(x, np.inf), out)


def _digamma(ops, x):
    """The derivative of lgamma: the asymptotic series at w = z + 6 >= 6.5 (error below 1e-12), less
    1/z + ... + 1/(z+5); x < 0.5 by the reflection ``digamma(1 - x) - pi / tan(pi x)``; NaN at the poles."""
    reflect, z, xs = _reflected(ops, x)
    w = ops.add(z, 6.0)
    r2 = ops.reciprocal(ops.square(w))
    series = r2 * (-1 / 12 + r2 * (1 / 120 + r2 * (-1 / 252 + r2 * (1 / 240 + r2 * (-1 / 132)))))
    out = ops.add(ops.subtract(ops.log(w), ops.divide(0.5, w)), series)
    for k in range(6):
        out = ops.subtract(out, ops.reciprocal(ops.add(z, float(k))))
    angle = ops.multiply(xs, np.pi)
    out = ops.where(reflect, ops.subtract(out, ops.divide(np.pi * ops.cos(angle), ops.sin(angle))), out)
    pole = ops.logical_and(ops.less_equal(x, 0.0), ops.equal(x, ops.floor(x)))
    return ops.where(pole, ops.full_like(x, np.nan), out)


def _erfc(ops, x):
    """1 - erf(x) below x = 2 (no cancellation there in float64); above, Laplace's continued fraction
    ``exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + (2/2) / (x + ...)))`` to 60 terms (below 1e-15 from x = 2)."""
    small = ops.less(x, 2.0)
    big = ops.where(small, ops.full_like(x, 2.0), x)
    frac = big
    for k in range(60, 0, -1):
        frac = ops.add(big, ops.divide(k / 2, frac))
    tail = ops.divide(ops.multiply(ops.exp(ops.negative(ops.square(big))), 1 / np.sqrt(np.pi)), frac)
    return ops.where(small, ops.subtract(1.0, ops.erf(ops.where(small, x, ops.zeros_like(x)))), tail)


lgamma = _special("Lgamma", _lgamma)
lgamma.__doc__ = ("`tf.math.lgamma(x)`: log|Gamma(x)| (+inf at 0, the negative integers and +-inf), from "
                  "keras.ops in float64, within 1e-12 of it.")
digamma = _special("Digamma", _digamma)
digamma.__doc__ = ("`tf.math.digamma(x)`: Gamma'(x) / Gamma(x) (NaN at 0 and the negative integers), from "
                   "keras.ops in float64, within 1e-12 of it.")
erfc = _special("Erfc", _erfc)
erfc.__doc__ = "`tf.math.erfc(x)`: 1 - erf(x), accurate where it is tiny (erfc(9) is 4e-37), from keras.ops."


def squared_difference(x, y, name=None):
    """`tf.math.squared_difference(x, y)`: ``(x - y) ** 2``, for numbers of one dtype."""
    ops = _ops()
    return ops.square(ops.subtract(_tensor(x), _tensor(y)))


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """`tf.math.reduce_euclidean_norm`: ``sqrt(sum(x ** 2))`` over `axis` (all of x when None)."""
    ops = _ops()
    return ops.sqrt(ops.sum(ops.square(_tensor(input_tensor)), axis=axis, keepdims=bool(keepdims)))


def scalar_mul(scalar, x, name=None):
    """`tf.scalar_mul(scalar, x)` / `tf.math.scalar_mul`: x times a scalar."""
    return _ops().multiply(_tensor(scalar), _tensor(x))


def realdiv(x, y, name=None):
    """`tf.realdiv(x, y)`: x / y for floating-point x and y."""
    return _ops().divide(_tensor(x), _tensor(y))


def _both(name: str, fn) -> dict:
    return {f"tf.{name}": fn, f"tf.math.{name}": fn}


# TensorFlow name -> keras.ops name; TensorFlow has each both as tf.NAME and tf.math.NAME
_TRIG = (("atan", "arctan"), ("asin", "arcsin"), ("acos", "arccos"), ("sinh", "sinh"), ("cosh", "cosh"),
         ("asinh", "arcsinh"), ("acosh", "arccosh"), ("atanh", "arctanh"))


CALLS = {
    **_both("cumsum", _scan("cumsum", 0.0)), "tf.math.cumprod": _scan("cumprod", 1.0),
    "tf.math.count_nonzero": count_nonzero,
    **{k: v for fn in ("any", "all", "logsumexp") for k, v in _both(f"reduce_{fn}", _reduction(fn)).items()},
    **{f"tf.math.{tf_name}": _unary(fn, tf_name) for tf_name, fn in (
        ("is_nan", "isnan"), ("is_inf", "isinf"), ("is_finite", "isfinite"), ("log_sigmoid", "log_sigmoid"),
        ("expm1", "expm1"), ("erfinv", "erfinv"))},
    **{k: v for tf_name, fn in _TRIG for k, v in _both(tf_name, _unary(fn, tf_name)).items()},
    "tf.math.rint": round_, "tf.math.reduce_euclidean_norm": reduce_euclidean_norm,
    **_both("scalar_mul", scalar_mul), "tf.realdiv": realdiv,
    "tf.math.rsqrt": _unary("rsqrt", "rsqrt"), **_both("round", round_),
    "tf.math.divide_no_nan": divide_no_nan, "tf.math.atan2": atan2, "tf.atan2": atan2,
    "tf.math.logical_xor": logical_xor,
    "tf.norm": norm, "tf.linalg.norm": norm, "tf.clip_by_norm": clip_by_norm,
    "tf.nn.l2_loss": l2_loss, "tf.nn.bias_add": bias_add,
    "tf.nn.softmax_cross_entropy_with_logits": softmax_cross_entropy_with_logits,
    "tf.nn.sparse_softmax_cross_entropy_with_logits": sparse_softmax_cross_entropy_with_logits,
    "tf.nn.dropout": dropout, "tf.random.truncated_normal": truncated_normal, "tf.random.shuffle": shuffle,
    "tf.nn.batch_normalization": batch_normalization, "tf.clip_by_global_norm": clip_by_global_norm,
    "tf.linalg.global_norm": global_norm, "tf.math.xlogy": xlogy, "tf.math.xdivy": xdivy,
    **{f"tf.math.{fn.__name__}": fn for fn in (lgamma, digamma, erfc)},
    **_both("squared_difference", squared_difference),
}
