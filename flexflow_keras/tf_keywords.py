"""TensorFlow's parameter names for the calls `python -m flexflow_keras` maps straight onto keras.ops
(tf_compat's `_SAME_OPS`: tf.reshape, tf.transpose, tf.reduce_sum, tf.add, ...): the same arguments in
the same order, under other names, so ``tf.reshape(x, shape=(-1, 4))`` or ``tf.transpose(x, perm=[0, 2,
1, 3])`` (keras.io's EANet) reached keras.ops.reshape / transpose with a keyword they do not take. `wrap`
gives a function that takes TensorFlow's names (and `name=`, which names nothing here) and calls the
keras.ops function positionally. A ``dtype`` may be TensorFlow's DataType number, as ``tf.as_dtype`` takes it
(``tf.zeros(1, 1)`` is float32 zeros: keras.io's layer-subclassing guide writes it), and is read as its name.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from flexflow_keras.errors import ArgumentError

_BINARY = ("x", "y")
_REDUCE = ("input_tensor", "axis", "keepdims")

# TensorFlow name -> its parameters in order (`name` aside), where they differ from keras.ops' names
PARAMS: dict[str, tuple[str, ...]] = {
    **{n: _BINARY for n in ("add", "subtract", "multiply", "maximum", "minimum", "pow", "equal", "not_equal",
                            "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_or",
                            "floordiv", "floormod", "mod")},
    **{n: _REDUCE for n in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_std",
                            "reduce_variance")},
    "reshape": ("tensor", "shape"),
    "transpose": ("a", "perm", "conjugate"),
    "expand_dims": ("input", "axis"),
    "squeeze": ("input", "axis"),
    "stack": ("values", "axis"),
    "unstack": ("value", "num", "axis"),
    "tile": ("input", "multiples"),
    "repeat": ("input", "repeats", "axis"),
    "stop_gradient": ("input",),
    "ones_like": ("input", "dtype", "layout"),
    "zeros_like": ("input", "dtype", "layout"),
    "ones": ("shape", "dtype", "layout"),
    "zeros": ("shape", "dtype", "layout"),
}

# TensorFlow's DataType enum (types.proto) -> dtype name, for the types flexflow_keras has
_DTYPE_NUMBERS = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 7: "string",
                  8: "complex64", 9: "int64", 10: "bool", 14: "bfloat16", 17: "uint16", 18: "complex128",
                  19: "float16", 22: "uint32", 23: "uint64"}


def tf_dtype(value):
    """`value` as a dtype Keras takes: TensorFlow's DataType number (``1`` is float32; as tf.as_dtype, a
    number equal to one, ``True`` or ``1.0``, is that one) becomes its name; anything else is returned as is.

    Raises:
        TypeError: for a number that is no DataType flexflow_keras has, as tf.as_dtype does.
    """
    if isinstance(value, (int, float, np.integer, np.floating)):
        name = _DTYPE_NUMBERS.get(value)
        if name is None:
            known = ", ".join(f"{k}={v}" for k, v in _DTYPE_NUMBERS.items())
            raise TypeError(f"Cannot convert the argument `type_value`: {value!r} to a TensorFlow DType: as a "
                            f"dtype, a number is TensorFlow's DataType enum ({known} here). Pass a dtype such "
                            f"as tf.float32 or 'float32'.")
        return name
    return value
# parameters TensorFlow has and keras.ops not, accepted at these values only
_ONLY = {"conjugate": (False,), "layout": (None,)}


@functools.cache  # one wrapper per name: tf.reshape is tf.reshape
def wrap(tf_name: str, fn):
    """`fn` (a keras.ops function) called with TensorFlow's parameter names of `tf_name`."""
    params = PARAMS.get(tf_name)
    if params is None or fn is None:
        return fn
    kept = [p for p in params if p not in _ONLY]  # in keras.ops' order, under keras.ops' names
    keras_name = dict(zip(kept, inspect.signature(fn).parameters, strict=False))

    def call(*args, name=None, **kwargs):
        if len(args) > len(params):
            raise ArgumentError(f"tf.{tf_name} takes at most {len(params)} positional arguments {params}, "
                                f"received {len(args)}.")
        given = dict(zip(params, args, strict=False))
        for key, value in kwargs.items():
            if key not in params or key in given:
                raise ArgumentError(f"tf.{tf_name}: unexpected or repeated argument {key!r}; its arguments are "
                                    f"{params + ('name',)}.")
            given[key] = value
        if given.get("dtype") is not None:
            given["dtype"] = tf_dtype(given["dtype"])
        for key, allowed in _ONLY.items():
            if key in given and given.pop(key) not in allowed:
                raise ArgumentError(f"tf.{tf_name}({key}=...) is not supported under python -m flexflow_keras; "
                                    f"only {key}={allowed[0]!r} is.")
        return fn(**{keras_name[k]: v for k, v in given.items()})

    call.__name__ = call.__qualname__ = tf_name
    call.__doc__ = f"tf.{tf_name} as keras.ops.{fn.__name__}, with TensorFlow's parameter names."
    call.__signature__ = inspect.Signature(  # what keras_alias checks a call against
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None if i else inspect.Parameter.empty)
         for i, p in enumerate(params)] + [inspect.Parameter("name", inspect.Parameter.KEYWORD_ONLY, default=None)])
    return call
