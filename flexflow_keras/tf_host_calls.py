"""The `tf.*` calls that run Python on the host under `python -m flexflow_keras` (tf_compat.py's `mapped_call`
looks in `CALLS`): `tf.print` (to standard error; once on symbolic tensors), `tf.compat.as_bytes` / `as_str`,
and `tf.numpy_function` / `tf.py_function` (a Python function on values: in a dataset's map or on arrays,
its results cast to `Tout`).
"""

from __future__ import annotations

import sys

import numpy as np

from flexflow_keras.errors import ArgumentError


def _host_function(who: str, as_tensors: bool):
    """`tf.numpy_function(func, inp, Tout)` / `tf.py_function`: `func` runs in Python on the values of `inp`
    (NumPy arrays; tensors with .numpy() for py_function), its results cast to `Tout`. Here a dataset's `map`
    runs on host arrays, as these calls do in TensorFlow; a model's symbolic tensors have no values to give."""

    def call(func, inp, Tout, stateful=True, name=None):  # noqa: N803 - TensorFlow's argument name
        from flexflow_keras.ops.eager_tensor import eager
        from flexflow_keras.ops.graph import KerasTensor

        args = list(inp) if isinstance(inp, (list, tuple)) else [inp]
        if any(isinstance(a, KerasTensor) for a in args):
            raise ArgumentError(f"{who} runs a Python function on values; inside a model the tensors are "
                                     f"symbolic. Call it in a tf.data map or on arrays, or write the computation "
                                     f"with keras.ops in a layer.")
        values = [eager(np.asarray(a)) if as_tensors else np.asarray(a) for a in args]
        out = func(*values)
        if not isinstance(Tout, (list, tuple)):
            return _as_tout(out, Tout, who)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(outs) != len(Tout):
            raise ArgumentError(f"{who}: the function returned {len(outs)} value(s) for Tout={list(Tout)!r} "
                                f"({len(Tout)} dtypes); return one value per dtype.")
        return [_as_tout(o, t, who) for o, t in zip(outs, Tout, strict=True)]

    return call


def _as_tout(value, dtype, who: str):
    """A host function's result as a tensor of the dtype it declared (tf.string: bytes or str as they are)."""
    from flexflow_keras.ops.eager_tensor import eager

    name = str(getattr(dtype, "name", dtype))
    if name in ("string", "str", "object"):
        return np.asarray(value, dtype=object)
    try:
        return eager(np.asarray(value, dtype=np.dtype(name)))
    except TypeError as e:
        raise ArgumentError(f"{who}: Tout={dtype!r} is not a dtype flexflow_keras knows ({e}); use a NumPy "
                            f"dtype name such as tf.float32 or tf.int64.") from None


def _print(*inputs, output_stream=None, sep=" ", end="\n", summarize=None, name=None) -> None:
    """`tf.print`: the values to standard error, as TensorFlow's default stream. On symbolic tensors (in
    a layer's call) it prints once, when the graph is recorded, where TensorFlow prints at every step."""
    stream = output_stream if hasattr(output_stream, "write") else sys.stderr
    text = sep.join(str(np.asarray(x)) if isinstance(x, np.ndarray) else str(x) for x in inputs)
    stream.write(text + end)


def _as_bytes(bytes_or_text, encoding="utf-8"):
    return bytes_or_text.encode(encoding) if isinstance(bytes_or_text, str) else bytes(bytes_or_text)


CALLS = {
    "tf.print": _print, "tf.compat.as_bytes": _as_bytes,
    "tf.compat.as_str": lambda b, encoding="utf-8": b.decode(encoding) if isinstance(b, bytes) else str(b),
    "tf.numpy_function": _host_function("tf.numpy_function", False),
    "tf.py_function": _host_function("tf.py_function", True),
}
