"""The `tf.*` / `tf.math.*` / `tf.nn.*` math calls mapped with TensorFlow's arguments and dtypes (tf_compat.py's
`mapped_call` looks in `CALLS`): `tf.reduce_mean` (an integer mean is an integer), `tf.divide` / `truediv`
(integers in float64), `tf.argmax` / `argmin` (axis 0, int64), `tf.math.top_k` / `tf.nn.top_k` (a TopKV2),
`tf.matmul` (transpose flags), `tf.math.l2_normalize`, `tf.nn.moments`, `tf.nn.sigmoid_cross_entropy_with_logits`,
`tf.add_n` and `tf.clip_by_value`. The rest of TensorFlow's math is tf_math_ops.py's.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from flexflow_keras.errors import ArgumentError, ConfigError
from flexflow_keras.tf_constants import _is_int


def _reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """TensorFlow's integer mean is an integer (the float mean truncated toward zero)."""
    from flexflow_keras import ops

    mean = ops.mean(input_tensor, axis=axis, keepdims=keepdims)
    if _is_int(input_tensor):
        return ops.cast(mean, str(getattr(input_tensor, "dtype", None) or np.asarray(input_tensor).dtype))
    return mean


def _divide(x, y, name=None):
    """TensorFlow divides two integer tensors in float64 (float32 on symbolic tensors here)."""
    from flexflow_keras import ops
    from flexflow_keras.ops.graph import KerasTensor

    if _is_int(x) and _is_int(y):
        to = "float32" if isinstance(x, KerasTensor) or isinstance(y, KerasTensor) else "float64"
        x, y = ops.cast(x, to), ops.cast(y, to)
    return ops.divide(x, y)


def _arg_reduce(fn: str):
    def arg(input, axis=None, output_type="int64", name=None):  # noqa: A002 (TensorFlow's argument names)
        """TensorFlow's `tf.argmax`/`tf.argmin`: axis 0 when not given (Keras flattens), int64 indices."""
        from flexflow_keras import ops

        return ops.cast(getattr(ops, fn)(input, axis=0 if axis is None else int(axis)), str(output_type))
    arg.__name__ = fn
    return arg


def _sigmoid_cross_entropy(labels=None, logits=None, name=None):
    from flexflow_keras.ops.loss_functions import sigmoid_cross_entropy_with_logits

    return sigmoid_cross_entropy_with_logits(labels, logits)


def _moments(x, axes, shift=None, keepdims=False, name=None):
    """`tf.nn.moments`: (mean, variance) over `axes` (keras.ops.moments); `shift` only steadies
    TensorFlow's arithmetic and is ignored, as TensorFlow 2's own implementation does."""
    from flexflow_keras import ops

    return ops.moments(x, [int(a) for a in np.atleast_1d(axes)], keepdims=bool(keepdims))


def _matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
            b_is_sparse=False, output_type=None, grad_a=False, grad_b=False, name=None):
    """`tf.matmul` with its transpose flags (real tensors: adjoint is transpose)."""
    from flexflow_keras import ops

    def swap(x):
        nd = len(np.shape(x))
        return ops.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))
    return ops.matmul(swap(a) if transpose_a or adjoint_a else a, swap(b) if transpose_b or adjoint_b else b)


def _l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """`tf.math.l2_normalize`: ``x / sqrt(max(sum(x**2, axis), epsilon))`` (axis None: all of x)."""
    from flexflow_keras import ops

    axis = dim if axis is None else axis
    return ops.multiply(x, ops.rsqrt(ops.maximum(ops.sum(ops.square(x), axis=axis, keepdims=True), epsilon)))


TopKV2 = namedtuple("TopKV2", ["values", "indices"])


def _top_k(input, k=1, sorted=True, index_type="int32", name=None):  # noqa: A002 (TensorFlow's argument names)
    """`tf.math.top_k` / `tf.nn.top_k`: keras.ops.top_k under TensorFlow's defaults (k=1) and result, a
    ``TopKV2(values, indices)`` tuple whose indices have `index_type` (int32 unless int64 is asked)."""
    from flexflow_keras import ops

    index_type = str(np.dtype(getattr(index_type, "name", index_type)))
    if index_type not in ("int16", "int32", "int64"):
        raise ArgumentError(f"tf.math.top_k: index_type must be int16, int32 or int64, received {index_type!r}.")
    values, indices = ops.top_k(input, k, sorted=sorted)
    return TopKV2(values, indices if index_type == "int32" else ops.cast(indices, index_type))


def _add_n(inputs):
    """`tf.add_n`: the sum of a list of tensors of one shape."""
    from flexflow_keras import ops

    inputs = list(inputs)
    if not inputs:
        raise ConfigError("tf.add_n needs at least one tensor.")
    out = inputs[0]
    for t in inputs[1:]:
        out = ops.add(out, t)
    return out


def _clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """`tf.clip_by_value` with TensorFlow's argument names."""
    from flexflow_keras import ops

    return ops.clip(t, clip_value_min, clip_value_max)


CALLS = {
    "tf.matmul": _matmul, "tf.linalg.matmul": _matmul, "tf.math.l2_normalize": _l2_normalize,
    "tf.nn.l2_normalize": _l2_normalize, "tf.nn.sigmoid_cross_entropy_with_logits": _sigmoid_cross_entropy,
    "tf.nn.moments": _moments, "tf.argmax": _arg_reduce("argmax"), "tf.math.argmax": _arg_reduce("argmax"),
    "tf.argmin": _arg_reduce("argmin"), "tf.math.argmin": _arg_reduce("argmin"),
    "tf.reduce_mean": _reduce_mean, "tf.math.reduce_mean": _reduce_mean, "tf.divide": _divide,
    "tf.math.divide": _divide, "tf.truediv": _divide, "tf.math.truediv": _divide,
    "tf.add_n": lambda inputs, name=None: _add_n(inputs),
    "tf.math.add_n": lambda inputs, name=None: _add_n(inputs),
    "tf.clip_by_value": lambda *a, **k: _clip_by_value(*a, **k), "tf.math.top_k": _top_k,
    "tf.nn.top_k": _top_k,
}
