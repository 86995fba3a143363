"""Keras 2's `keras.backend` tensor functions (``K.mean``, ``K.square``, ``K.batch_dot``, ...), as Keras 2
scripts call them in Lambda layers, custom layers and losses: each maps onto `flexflow_keras.ops`, so it
records graph ops (with backward passes) on symbolic tensors and computes at once on arrays.

Keras 2 argument names and defaults are kept (``axis=None, keepdims=False``; ``K.concatenate(axis=-1)``;
``K.l2_normalize(x, axis=None)``; ``K.learning_phase()`` is 0 outside training).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras import ops
from flexflow_keras.ops.graph import KerasTensor, Variable

__all__ = ["mean", "sum", "square", "sqrt", "abs", "maximum", "minimum", "concatenate", "l2_normalize", "exp",
           "log", "cast", "equal", "not_equal", "greater", "less", "shape", "random_normal", "random_uniform",
           "relu", "dot", "batch_dot", "flatten", "batch_flatten", "reshape", "stack", "clip", "pow", "max",
           "min", "argmax", "argmin", "softmax", "sigmoid", "tanh", "softplus", "binary_crossentropy",
           "categorical_crossentropy", "sparse_categorical_crossentropy", "ones_like", "zeros_like", "ones",
           "zeros", "variable", "constant", "learning_phase", "expand_dims", "squeeze", "transpose", "gather",
           "std", "var", "prod", "cumsum", "sign", "round", "stop_gradient", "switch", "tile", "repeat_elements",
           "permute_dimensions", "one_hot", "ndim", "dtype", "eval", "count_params", "is_tensor", "elu",
           "hard_sigmoid", "any", "all", "logsumexp", "in_top_k", "l2_normalize", "square"]


def mean(x, axis=None, keepdims=False):
    """Mean over `axis` (None: all)."""
    return ops.mean(x, axis, keepdims)


def sum(x, axis=None, keepdims=False):  # noqa: A001 - the Keras name
    """Sum over `axis`."""
    return ops.sum(x, axis, keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001
    """Maximum over `axis`."""
    return ops.max(x, axis, keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    """Minimum over `axis`."""
    return ops.min(x, axis, keepdims)


def prod(x, axis=None, keepdims=False):
    """Product over `axis`."""
    return ops.prod(x, axis, keepdims)


def std(x, axis=None, keepdims=False):
    """Standard deviation over `axis`."""
    return ops.std(x, axis, keepdims)


def var(x, axis=None, keepdims=False):
    """Variance over `axis`."""
    return ops.var(x, axis, keepdims)


def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` over `axis`."""
    return ops.logsumexp(x, axis, keepdims)


def any(x, axis=None, keepdims=False):  # noqa: A001
    """Whether any element over `axis` is non-zero (bool)."""
    return ops.greater(ops.max(ops.cast(ops.not_equal(x, 0), "float32"), axis, keepdims), 0.0)


def all(x, axis=None, keepdims=False):  # noqa: A001
    """Whether every element over `axis` is non-zero (bool)."""
    return ops.greater(ops.min(ops.cast(ops.not_equal(x, 0), "float32"), axis, keepdims), 0.0)


square, sqrt, exp, log, abs, sign, round = ops.square, ops.sqrt, ops.exp, ops.log, ops.abs, ops.sign, ops.round  # noqa: A001
maximum, minimum, equal, not_equal, greater, less = (ops.maximum, ops.minimum, ops.equal, ops.not_equal,
                                                     ops.greater, ops.less)
sigmoid, tanh, softplus, hard_sigmoid = ops.sigmoid, ops.tanh, ops.softplus, ops.hard_sigmoid
stop_gradient, cast, expand_dims, stack, cumsum, one_hot = (ops.stop_gradient, ops.cast, ops.expand_dims, ops.stack,
                                                            ops.cumsum, ops.one_hot)
ones_like, zeros_like, argmax, argmin, is_tensor, in_top_k = (ops.ones_like, ops.zeros_like, ops.argmax, ops.argmin,
                                                              ops.is_tensor, ops.in_top_k)


def pow(x, a):  # noqa: A001
    """``x ** a``."""
    return ops.power(x, a)


def clip(x, min_value, max_value):
    """Clip into [min_value, max_value] (None: unbounded on that side)."""
    lo = -np.inf if min_value is None else float(min_value)
    hi = np.inf if max_value is None else float(max_value)
    return ops.clip(x, lo, hi)


def concatenate(tensors, axis=-1):
    """Join tensors along `axis` (Keras 2's default: the last)."""
    return ops.concatenate(list(tensors), axis=axis)


def l2_normalize(x, axis=None):
    """``x / sqrt(max(sum(x ** 2, axis), 1e-12))``."""
    return ops.multiply(x, ops.rsqrt(ops.maximum(ops.sum(ops.square(x), axis, keepdims=True), 1e-12)))


def shape(x):
    """The shape (the batch of a symbolic tensor is ``ops.shape(x)[0]``: usable in K.random_normal)."""
    return ops.shape(x)


def ndim(x) -> int:
    """The number of dims."""
    return len(ops.shape(x))


def dtype(x) -> str:
    """The dtype name."""
    return str(x.dtype)


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """Rectified linear unit with Keras 2's options."""
    y = ops.relu(x) if alpha == 0.0 and threshold == 0.0 else ops.where(ops.greater(x, threshold), x,
                                                                       ops.multiply(ops.subtract(x, threshold), alpha))
    return y if max_value is None else ops.minimum(y, float(max_value))


def elu(x, alpha=1.0):
    """Exponential linear unit."""
    return ops.elu(x, alpha=alpha)


def softmax(x, axis=-1):
    """Softmax along `axis`."""
    return ops.softmax(x, axis)


def dot(x, y):
    """Keras 2's dot: a matrix product over x's last axis and y's second-to-last (or only) axis."""
    ynd = len(ops.shape(y))
    if ynd > 2:
        perm = [ynd - 2] + [i for i in range(ynd) if i != ynd - 2]
        y2 = ops.reshape(ops.transpose(y, perm), (ops.shape(y)[ynd - 2], -1))
        out = ops.matmul(x, y2)
        rest = [s for i, s in enumerate(ops.shape(y)) if i != ynd - 2]
        return ops.reshape(out, tuple(ops.shape(x)[:-1]) + tuple(rest))
    return ops.matmul(x, y)


def batch_dot(x, y, axes=None):
    """Per-sample dot products (Keras 2): contract `axes` (default: x's last with y's last for 2-D inputs,
    else x's last with y's second) sample by sample."""
    xn, yn = len(ops.shape(x)), len(ops.shape(y))
    if axes is None:
        axes = (xn - 1, yn - 1 if yn == 2 else yn - 2)
    elif isinstance(axes, int):
        axes = (axes, axes)
    ax, ay = axes[0] % xn, axes[1] % yn
    letters = "bcdefghijklmnopqrstuvwxyz"
    xs = ["a"] + list(letters[:xn - 1])
    ys = ["a"] + list(letters[xn - 1:xn + yn - 2])
    ys[ay] = xs[ax]
    out = [c for c in xs if c != xs[ax]] + [c for c in ys[1:] if c != xs[ax]]
    result = ops.einsum(f"{''.join(xs)},{''.join(ys)}->{''.join(out)}", x, y)
    return ops.expand_dims(result, 1) if len(out) == 1 else result


def flatten(x):
    """Keras 2's flatten: all dims into one (a symbolic x keeps its batch: use batch_flatten)."""
    if isinstance(x, KerasTensor):
        return batch_flatten(x)
    return np.reshape(x, (-1,))


def batch_flatten(x):
    """(batch, everything else)."""
    return ops.reshape(x, (-1, int(np.prod([s for s in ops.shape(x)[1:]], dtype=np.int64))))


def reshape(x, shape):
    """Reshape to `shape` (batch first)."""
    return ops.reshape(x, shape)


def squeeze(x, axis):
    """Remove the size-1 dim `axis`."""
    return ops.squeeze(x, axis)


def transpose(x):
    """Reverse the non-batch dims of a symbolic x (all dims of an array), as Keras 2's K.transpose."""
    nd = len(ops.shape(x))
    if isinstance(x, KerasTensor):
        return ops.transpose(x, [0] + list(range(nd - 1, 0, -1)))
    return ops.transpose(x)


def permute_dimensions(x, pattern):
    """Permute the dims by `pattern` (the whole pattern, batch included)."""
    return ops.transpose(x, pattern)


def gather(reference, indices):
    """Rows of `reference` at `indices` (an embedding lookup)."""
    return ops.take(reference, indices, axis=0)


def tile(x, n):
    """Tile x `n` times per dim."""
    return ops.tile(x, n)


def repeat_elements(x, rep, axis):
    """Repeat each element `rep` times along `axis`."""
    return ops.repeat(x, rep, axis)


def switch(condition, then_expression, else_expression):
    """Element-wise ``condition ? then : else``."""
    return ops.where(condition, then_expression, else_expression)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal values; a shape holding ``K.shape(x)[0]`` draws one row per sample, fresh at every step."""
    from flexflow_keras import random

    return random.normal(shape, mean, stddev, dtype, seed)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Uniform values in [minval, maxval)."""
    from flexflow_keras import random

    return random.uniform(shape, minval, maxval, dtype, seed)


def binary_crossentropy(target, output, from_logits=False):
    """Element-wise binary crossentropy (Keras 2: no reduction over the last axis)."""
    if from_logits:
        output = ops.sigmoid(output)
    eps = 1e-7
    p = ops.clip(output, eps, 1.0 - eps)
    return ops.negative(ops.add(ops.multiply(target, ops.log(p)),
                                ops.multiply(ops.subtract(1.0, target), ops.log(ops.subtract(1.0, p)))))


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Per-sample categorical crossentropy."""
    return ops.categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Per-sample sparse categorical crossentropy."""
    return ops.sparse_categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def ones(shape, dtype=None, name=None):
    """A tensor of ones."""
    return ops.ones(shape, dtype)


def zeros(shape, dtype=None, name=None):
    """A tensor of zeros."""
    return ops.zeros(shape, dtype)


def variable(value, dtype=None, name=None, constraint=None):
    """A (trainable) variable holding `value`."""
    arr = np.asarray(value, dtype=dtype or ("float32" if np.asarray(value).dtype.kind == "f" else None))
    return Variable(name or "variable", arr.shape, str(arr.dtype), initializer=arr, constraint=constraint)


def constant(value, dtype=None, shape=None, name=None):
    """A constant array (filled to `shape` when value is a scalar)."""
    arr = np.asarray(value, dtype=dtype or "float32")
    return np.broadcast_to(arr, shape).copy() if shape is not None else arr


def eval(x):  # noqa: A001 - the Keras name
    """The value of a variable or array."""
    return x.numpy() if isinstance(x, Variable) else np.asarray(x)


def count_params(x) -> int:
    """Number of scalars in a variable or array."""
    return int(np.prod(ops.shape(x), dtype=np.int64))


def learning_phase() -> int:
    """1 inside a training call, else 0 (Keras 2 scripts read it in eager code)."""
    from flexflow_keras.layers.node import current_training

    return 1 if current_training() else 0
