"""Keras 3's result dtypes for the `keras.ops` functions composed in `numpy_math`, `numpy_arrays` and
`nn_more` (Keras' `backend.result_type`, for the cases scripts meet): a float array wins over ints and
Python numbers (int32 with float32 is float32, where NumPy says float64), else the widest float or int of
the arrays; Python numbers (and lists of them) are weak: float32 or int32 on their own.

Example:
    >>> result_type(np.ones(2, "int32"), np.ones(2, "float32"))
    'float32'
    >>> result_type(np.ones(2, "int32"), floating=True)
    'float32'
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.ops import functional as F

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _is_python(v) -> bool:
    return type(v) in (bool, int, float)


def dtype_of(v) -> str:
    """The dtype Keras gives `v` as a tensor: an array's or tensor's own; Python numbers and lists of them
    int32, float32 or bool."""
    if _is_python(v):
        return {bool: "bool", int: "int32", float: "float32"}[type(v)]
    d = getattr(v, "dtype", None)
    if d is not None:
        return str(d) if isinstance(d, str) else str(np.dtype(d))
    arr = np.asarray(v)
    return {"int64": "int32", "float64": "float32"}.get(str(arr.dtype), str(arr.dtype))


_INT32 = np.iinfo(np.int32)


def python_dtype(v) -> str | None:
    """The dtype TensorFlow's conversion gives a Python number or a (nested) list or tuple of numbers: bool
    for bools, float32 for floats (the widest NumPy float among them when there is one: a NumPy float64 or
    float16 inside a list keeps its width), int32 for ints (int64 once one leaves int32's range, NumPy ints
    included), float32 for an empty list; None for anything else (an array or a tensor keeps its own dtype)."""
    if not isinstance(v, list | tuple) and not _is_python(v):
        return None
    leaves, stack = [], [v]
    while stack:
        item = stack.pop()
        if isinstance(item, list | tuple):
            stack.extend(item)
        elif _is_python(item) or isinstance(item, np.bool_ | np.integer | np.floating):
            leaves.append(item)
        else:  # an array or a tensor inside the list: NumPy's stacking decides
            return None
    if not leaves:
        return "float32"
    if all(isinstance(x, bool | np.bool_) for x in leaves):
        return "bool"
    floats = [x for x in leaves if isinstance(x, float | np.floating)]
    if floats:
        widths = [np.dtype(type(x)).name for x in floats if isinstance(x, np.floating)]
        return max(widths, key=lambda d: np.dtype(d).itemsize) if widths else "float32"
    ints = [int(x) for x in leaves]
    return "int32" if _INT32.min <= min(ints) and max(ints) <= _INT32.max else "int64"


def result_type(*values, floating: bool = False) -> str:
    """The dtype Keras 3 computes `values` in; `floating`: at least float32 (sin, mean, arctan2, ...)."""
    arrays = [dtype_of(v) for v in values if v is not None and not _is_python(v)]
    python = {type(v) for v in values if _is_python(v)}
    floats = [d for d in arrays if d in _FLOATS]
    if floats:
        return max(floats, key=_FLOATS.index)
    if floating or float in python:
        return "float32"
    ints = [d for d in arrays if np.dtype(d).kind in "iu"]
    if ints:
        return str(np.result_type(*ints))
    if int in python:
        return "int32"
    return "bool"


def as_dtype(v, dtype: str, symbolic: bool):
    """`v` as a tensor of `dtype` (symbolic: a KerasTensor, constants for arrays and numbers)."""
    t = F._tensor(v, symbolic)
    return t if dtype_of(t) == dtype else F.cast(t, dtype)


def operands(*values, floating: bool = False) -> tuple:
    """(symbolic?, dtype, tensors): `values` converted to their common Keras result dtype."""
    sym = F._symbolic(*values)
    dtype = result_type(*values, floating=floating)
    return sym, dtype, tuple(as_dtype(v, dtype, sym) for v in values)
