"""`tf.experimental.numpy` (``import tensorflow.experimental.numpy as tnp``) under `python -m flexflow_keras`.

TensorFlow's NumPy API and `keras.ops` both follow NumPy, so ``tnp.matmul`` / ``tnp.maximum`` / ``tnp.mean``
(keras.io's "Writing Keras models with TensorFlow NumPy") run as the `keras.ops` function of the same name,
symbolic in a layer's ``call`` and eager on arrays. `NAMES` lists the functions both define. Where tnp's
positional parameters differ from `keras.ops`' (``tnp.mean(a, axis, dtype, out, keepdims)`` against
``ops.mean(x, axis, keepdims)``), `call` binds the arguments to tnp's parameters first; a ``dtype=`` casts
the input as NumPy's accumulator dtype does, and an argument with no Keras meaning other than its default
(``out=``, ``order=``, ``kind=``, ``ddof=`` not 0, ...) is a `RawTensorFlowError` naming it. Dtypes are
their names (``tnp.float32`` is ``"float32"``), as in the stand-in `tensorflow`. Any other tnp name stays
refused by keras_alias with the usual message.
"""

from __future__ import annotations

import numpy as np

# Functions of tf.experimental.numpy that keras.ops defines with NumPy's meaning.
NAMES = frozenset((
    "abs", "absolute", "add", "all", "allclose", "amax", "amin", "any", "append", "arange", "arccos", "arccosh",
    "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "argmax", "argmin", "argsort", "array", "average",
    "broadcast_to", "cbrt", "ceil", "clip", "concatenate", "copy", "cos", "cosh", "count_nonzero", "cumprod",
    "cumsum", "deg2rad", "diag", "diagonal", "diff", "divide", "dot", "dstack", "einsum", "empty", "empty_like",
    "equal", "exp", "exp2", "expand_dims", "expm1", "eye", "fabs", "flip", "fliplr", "flipud", "floor",
    "floor_divide", "full", "full_like", "greater", "greater_equal", "heaviside", "hstack", "hypot", "identity",
    "inner", "isclose", "isfinite", "isinf", "isnan", "isneginf", "isposinf", "kron", "less", "less_equal",
    "linspace", "log", "log10", "log1p", "log2", "logaddexp", "logical_and", "logical_not", "logical_or",
    "logical_xor", "matmul", "max", "maximum", "mean", "meshgrid", "min", "minimum", "mod", "moveaxis",
    "multiply", "ndim", "negative", "nonzero", "not_equal", "ones", "ones_like", "outer", "pad", "power", "prod",
    "ptp", "rad2deg", "ravel", "reciprocal", "repeat", "reshape", "roll", "rot90", "round", "select", "sign",
    "signbit", "sin", "sinc", "sinh", "size", "sort", "split", "sqrt", "square", "squeeze", "stack", "std",
    "subtract", "sum", "swapaxes", "take", "take_along_axis", "tan", "tanh", "tensordot", "tile", "trace",
    "transpose", "tri", "tril", "triu", "true_divide", "var", "vdot", "vstack", "where", "zeros", "zeros_like"))

# tnp's positional parameters where their order differs from keras.ops' (beyond the data arguments' names),
# with how many lead ones are data arguments passed on positionally.
_PARAMS = {
    "mean": (1, ("a", "axis", "dtype", "out", "keepdims")),
    "sum": (1, ("a", "axis", "dtype", "keepdims")),
    "prod": (1, ("a", "axis", "dtype", "keepdims")),
    "var": (1, ("a", "axis", "dtype", "out", "ddof", "keepdims")),
    "amax": (1, ("a", "axis", "out", "keepdims")),
    "amin": (1, ("a", "axis", "out", "keepdims")),
    "trace": (1, ("a", "offset", "axis1", "axis2", "dtype")),
    "take": (2, ("a", "indices", "axis", "out", "mode")),
    "sign": (1, ("x", "out", "where")),
    "argsort": (1, ("a", "axis", "kind", "order")),
    "sort": (1, ("a", "axis", "kind", "order")),
    "average": (1, ("a", "axis", "weights", "returned")),
    "full_like": (2, ("a", "fill_value", "dtype", "order", "subok", "shape")),
    "array": (1, ("val", "dtype", "copy", "ndmin")),
    "size": (1, ("x", "axis")),
    "reshape": (1, ("a", "newshape", "order")),
    "clip": (1, ("a", "a_min", "a_max")),
    "tile": (1, ("a", "reps")),
    "where": (1, ("condition", "x", "y")),
}
# tnp's keyword names that keras.ops spells otherwise
_RENAMED = {"a_min": "x_min", "a_max": "x_max", "reps": "repeats"}
_WHERE_RENAMED = {"x": "x1", "y": "x2"}
# tnp arguments with no keras.ops meaning: accepted only at these values (NumPy's defaults)
_DEFAULT_ONLY = {"out": (None,), "where": (None, True), "kind": (None, "quicksort"), "order": (None, "C"),
                 "subok": (None, True), "copy": (True, False), "ndmin": (0,), "ddof": (0, None),
                 "returned": (False,), "mode": (None, "clip", "raise")}
_ACCUMULATES = frozenset(("mean", "sum", "prod", "var", "trace"))  # dtype= is the accumulator's: cast first

CONSTANTS = {
    **{f"tf.experimental.numpy.{name}": name for name in (
        "bool_", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64", "complex64", "complex128")},
    "tf.experimental.numpy.bool_": "bool",
    "tf.experimental.numpy.newaxis": None,
    "tf.experimental.numpy.pi": np.pi,
    "tf.experimental.numpy.e": np.e,
    "tf.experimental.numpy.inf": np.inf,
    "tf.experimental.numpy.nan": np.nan,
}


def _refused(call: str, detail: str):
    from flexflow_keras.keras_alias import RawTensorFlowError

    return RawTensorFlowError(
        f"{call}: {detail} Under `python -m flexflow_keras` tf.experimental.numpy runs as keras.ops, which has "
        f"no such argument; drop it, or run the script with TensorFlow itself.")


def call(name: str):
    """The function `tf.experimental.numpy.<name>` runs as, or None when `name` is not mapped."""
    if name not in NAMES:
        return None
    from flexflow_keras import ops

    fn = getattr(ops, name)
    if name not in _PARAMS:
        return fn  # the same positional parameters: keras_alias checks the arguments against them
    n_data, params = _PARAMS[name]
    path = f"tf.experimental.numpy.{name}"

    def run(*args, **kwargs):
        if len(args) > len(params):
            raise TypeError(f"{path}() takes at most {len(params)} positional arguments {params}, received "
                            f"{len(args)}.")
        bound = dict(zip(params, args, strict=False))
        for key, value in kwargs.items():
            if key in bound:
                raise TypeError(f"{path}() got multiple values for argument {key!r}.")
            bound[key] = value
        data = [bound.pop(p) for p in params[:n_data] if p in bound]
        for key in [k for k in bound if k in _DEFAULT_ONLY]:
            value = bound.pop(key)
            if not any(value is d or (not isinstance(value, np.ndarray) and value == d) for d in _DEFAULT_ONLY[key]):
                raise _refused(path, f"{key}={value!r} is not supported.")
        dtype = bound.pop("dtype", None) if name in _ACCUMULATES else bound.get("dtype")
        if name in _ACCUMULATES and dtype is not None:
            data[0] = ops.cast(data[0], dtype)
        renamed = _WHERE_RENAMED if name == "where" else _RENAMED
        return fn(*data, **{renamed.get(k, k): v for k, v in bound.items()})

    run.__name__ = run.__qualname__ = name
    return run


__all__ = ["CONSTANTS", "NAMES", "call"]
