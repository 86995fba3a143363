"""`tf.strings` on NumPy arrays of strings, for `python -m flexflow_keras` (tf_compat.py): the functions
text pipelines call in a TextVectorization `standardize`, a `Dataset.map` or a decoding step (keras.io's
text classification, OCR and translation scripts).

Each takes an array of str or bytes (or one string, or a list) and returns an array of the same shape
of bytes (an object array: what TensorFlow's `.numpy()` gives for strings). As TensorFlow: `lower`/`upper` change ASCII letters only unless ``encoding="utf-8"``;
`regex_replace` uses Python's `re` (RE2's syntax for the patterns scripts write: classes, escapes,
alternation); `split` without a separator splits on runs of ASCII white space, and of an array gives a
`RaggedTensor` (tf_ragged.py) that `to_number`, the element-wise functions and ``.to_tensor()`` take; `length` counts bytes
(``unit="UTF8_CHAR"``: characters); `reduce_join` joins along an axis (all of them for None).
"""

from __future__ import annotations

import re

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.tf_ragged import RaggedTensor

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_WHITESPACE = re.compile(r"[ \t\n\r\v\f]+")


def _array(x) -> np.ndarray:
    if isinstance(x, (str, bytes)):
        return np.asarray(x, dtype=object)
    arr = np.asarray(x)
    if arr.dtype.kind not in "USO":
        raise TypeError(f"tf.strings expects strings, received an array of {arr.dtype}; convert numbers with "
                        f"tf.strings.as_string first.")
    return arr


def _text(v) -> str:
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def _result(values: list, shape):
    from flexflow_keras.data.dataset import as_tensor

    out = np.empty(len(values), dtype=object)
    out[:] = [v.encode("utf-8") for v in values]
    return as_tensor(out.reshape(shape))


def _map(x, fn):
    if isinstance(x, RaggedTensor):  # tf.strings.split's rows: the same rows, mapped
        return x.map_values(lambda row: np.asarray(_map(row, fn)))
    arr = _array(x)
    values = [fn(_text(v)) for v in arr.reshape(-1).tolist()]
    return _result(values, arr.shape)


def lower(input, encoding="", name=None):  # noqa: A002 - TensorFlow's argument name
    utf8 = str(encoding).lower().replace("-", "") == "utf8"
    return _map(input, (lambda s: s.lower()) if utf8 else (lambda s: s.translate(_ASCII_LOWER)))


def upper(input, encoding="", name=None):  # noqa: A002
    utf8 = str(encoding).lower().replace("-", "") == "utf8"
    return _map(input, (lambda s: s.upper()) if utf8 else (lambda s: s.translate(_ASCII_UPPER)))


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    rx = re.compile(_text(pattern))
    rewrite = re.sub(r"\\(\d)", r"\\g<\1>", _text(rewrite))  # RE2's \1 as Python's \g<1>
    count = 0 if replace_global else 1
    return _map(input, lambda s: rx.sub(rewrite, s, count=count))


def regex_full_match(input, pattern, name=None):  # noqa: A002
    from flexflow_keras.ops.eager_tensor import EagerTensor

    rx = re.compile(_text(pattern))
    arr = _array(input)
    return np.asarray([rx.fullmatch(_text(v)) is not None for v in arr.reshape(-1).tolist()],
                      bool).reshape(arr.shape).view(EagerTensor)


def strip(input, name=None):  # noqa: A002
    return _map(input, lambda s: s.strip(" \t\n\r\v\f"))


def length(input, unit="BYTE", name=None):  # noqa: A002
    from flexflow_keras.ops.eager_tensor import EagerTensor

    arr = _array(input)
    count = (lambda s: len(s)) if unit == "UTF8_CHAR" else (lambda s: len(s.encode("utf-8")))
    return np.asarray([count(_text(v)) for v in arr.reshape(-1).tolist()], np.int32).reshape(arr.shape).view(
        EagerTensor)


def substr(input, pos, len, unit="BYTE", name=None):  # noqa: A002
    def cut(s: str) -> str:
        if unit == "UTF8_CHAR":
            return s[pos:pos + len]
        return s.encode("utf-8")[pos:pos + len].decode("utf-8", errors="ignore")
    return _map(input, cut)


def split(input, sep=None, maxsplit=-1, name=None):  # noqa: A002
    """One string: an array of its pieces. An array of strings: a `RaggedTensor` (tf_ragged.py) of such
    rows, one per string, as TensorFlow gives (nested for more dimensions)."""
    arr = _array(input)

    def pieces(s: str) -> list:
        if sep is not None:
            return s.split(_text(sep), maxsplit)
        parts = [p for p in _WHITESPACE.split(s) if p]
        if 0 <= maxsplit < len(parts):
            rest = _WHITESPACE.split(s.strip(" \t\n\r\v\f"), maxsplit)
            return rest
        return parts

    def one(v):
        p = pieces(_text(v))
        return _result(p, (len(p),))

    if arr.ndim == 0:
        return one(arr.item())
    if arr.ndim == 1:
        return RaggedTensor([np.asarray(one(v)) for v in arr.tolist()], "string")
    return RaggedTensor([split(row, sep, maxsplit) for row in arr], "string")


def join(inputs, separator="", name=None):
    arrays = [_array(a) for a in inputs]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    cols = [np.broadcast_to(a, shape).reshape(-1).tolist() for a in arrays]
    values = [_text(separator).join(_text(c[i]) for c in cols) for i in range(int(np.prod(shape, dtype=np.int64)))]
    return _result(values, shape)


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    if isinstance(inputs, RaggedTensor):
        return _reduce_join_ragged(inputs, axis, keepdims, separator)
    arr = _array(inputs)
    text = np.vectorize(_text, otypes=[object])(arr) if arr.size else arr.astype(object)
    sep = _text(separator)
    if axis is None:
        out = sep.join(text.reshape(-1).tolist())
        return _result([out], (1,) * arr.ndim if keepdims else ())
    moved = np.moveaxis(text, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1]) if moved.ndim else moved.reshape(1, 1)
    values = [sep.join(row) for row in flat.tolist()]
    shape = moved.shape[:-1]
    out = _result(values, shape)
    return np.expand_dims(out, axis) if keepdims else out


def _reduce_join_ragged(ragged: RaggedTensor, axis, keepdims: bool, separator):
    """reduce_join of a RaggedTensor (unicode_split's characters, StringLookup(invert=True)'s rows) along its
    last axis (each innermost row joined: a dense array, or a RaggedTensor when rows stay ragged above it)
    or all of them (axis=None)."""
    ndim = ragged.ndim
    if axis is None:
        joined = _text(separator).join(_text(v) for v in np.asarray(ragged.flat_values, dtype=object).reshape(-1))
        return _result([joined], (1,) * ndim if keepdims else ())
    if int(axis) not in (-1, ndim - 1):
        raise ArgumentError(f"tf.strings.reduce_join of a RaggedTensor of rank {ndim} joins along its last axis "
                            f"(axis=-1) or all of them (axis=None) under `python -m flexflow_keras`; received "
                            f"axis={axis}. Call .to_tensor() first to join along another axis.")
    rows = [_reduce_join_ragged(r, -1, keepdims, separator) if isinstance(r, RaggedTensor)
            else reduce_join(np.asarray(r, dtype=object), -1, keepdims, separator) for r in ragged]
    if rows and all(not isinstance(r, RaggedTensor) for r in rows) and ndim == 2:
        values = [_text(np.asarray(r).reshape(-1)[0]) for r in rows]
        return _result(values, (len(values), 1) if keepdims else (len(values),))
    return RaggedTensor([np.asarray(r) if not isinstance(r, RaggedTensor) else r for r in rows], "string")


def as_string(input, precision=-1, name=None):  # noqa: A002
    arr = np.asarray(input)
    if arr.dtype.kind == "f":
        fmt = (lambda v: f"{v:.{precision}f}") if precision >= 0 else (lambda v: f"{v:f}")
    else:
        fmt = str
    return _result([fmt(v) for v in arr.reshape(-1).tolist()], arr.shape)


def to_number(string_tensor, out_type="float32", name=None):
    from flexflow_keras.ops.eager_tensor import EagerTensor

    if isinstance(string_tensor, RaggedTensor):
        return string_tensor.map_values(lambda row: np.asarray(to_number(row, out_type)))
    arr = _array(string_tensor)
    dtype = np.dtype(getattr(out_type, "name", out_type))
    conv = float if dtype.kind == "f" else int
    try:
        values = [conv(_text(v).strip()) for v in arr.reshape(-1).tolist()]
    except ValueError as e:
        raise ArgumentError(f"tf.strings.to_number could not read a number: {e}.") from None
    return np.asarray(values, dtype).reshape(arr.shape).view(EagerTensor)


def unicode_split(input, input_encoding="UTF-8", errors="replace", name=None):  # noqa: A002
    """One string: an array of its characters (each as UTF-8 bytes). An array of strings (or a RaggedTensor
    of them): a `RaggedTensor` with one row of characters per string, nested for more dimensions, as
    TensorFlow gives."""
    if isinstance(input, RaggedTensor):
        return RaggedTensor([unicode_split(row, input_encoding, errors) for row in input], "string")
    arr = _array(input)
    if arr.ndim == 0:
        s = _text(arr.item())
        return _result(list(s), (len(s),))
    if arr.ndim == 1:
        return RaggedTensor([np.asarray(unicode_split(v, input_encoding, errors)) for v in arr.tolist()], "string")
    return RaggedTensor([unicode_split(row, input_encoding, errors) for row in arr], "string")


NAMES = ("lower", "upper", "regex_replace", "regex_full_match", "strip", "length", "substr", "split", "join",
         "reduce_join", "as_string", "to_number", "unicode_split")
