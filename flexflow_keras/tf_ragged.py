"""`RaggedTensor`: what `tf.strings.split` returns for an array of strings under `python -m flexflow_keras`
(a row of pieces per string, rows of different lengths), on the host, for dataset maps such as keras.io's
``tf.strings.to_number(tf.strings.split(ratings, ",")).to_tensor()``.

It holds its rows as NumPy arrays (or, for deeper nesting, as RaggedTensors) and answers the calls scripts
make on TensorFlow's: `to_tensor` (padded with `default_value`, b"" or 0, as TensorFlow pads; `shape`
cuts or pads to a size), `to_list`, `row_lengths`, `nrows`, `flat_values`, `numpy`, `shape`, `dtype`,
`len`, iteration and indexing by row. Element-wise tf.strings functions map over it (`map_values`).

`constant` is ``tf.ragged.constant`` for nested Python lists (keras.io's multi-label example builds its
label sets with it for ``StringLookup(output_mode="multi_hot")``): TensorFlow's dtypes (str -> bytes
strings, int -> int32, float -> float32, bool, an empty list float32), rows of any depth nested.
"""

from __future__ import annotations

import numpy as np


class RaggedTensor:
    """Rows of different lengths (see the module docstring)."""

    def __init__(self, rows: list, dtype: str):
        self._rows = list(rows)
        self.dtype = dtype

    @property
    def shape(self) -> tuple:
        inner = self._rows[0].shape[1:] if self._rows and isinstance(self._rows[0], np.ndarray) else ()
        return (len(self._rows), None) + tuple(inner)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def nrows(self):
        return np.int64(len(self._rows))

    def row_lengths(self, axis=1):
        return np.asarray([len(r) for r in self._rows], dtype=np.int64)

    @property
    def flat_values(self):
        flat = [r.flat_values if isinstance(r, RaggedTensor) else np.asarray(r) for r in self._rows]
        return _wrap(np.concatenate(flat) if flat else np.empty(0, _np_dtype(self.dtype)))

    def map_values(self, fn) -> RaggedTensor:
        """A RaggedTensor of the same rows with `fn` applied to each row's values (an array -> an array)."""
        rows = [r.map_values(fn) if isinstance(r, RaggedTensor) else np.asarray(fn(r)) for r in self._rows]
        first = next((r for r in rows if not isinstance(r, RaggedTensor)), None)
        return RaggedTensor(rows, _dtype_name(first) if first is not None else self.dtype)

    def to_list(self) -> list:
        return [r.to_list() if isinstance(r, RaggedTensor) else np.asarray(r).tolist() for r in self._rows]

    def numpy(self) -> np.ndarray:
        """TensorFlow's: an object array of the rows, or one dense array when the rows are all one length."""
        rows = [r.numpy() if isinstance(r, RaggedTensor) else np.asarray(r) for r in self._rows]
        if not rows:
            return np.zeros((0, 0), _np_dtype(self.dtype))
        if not any(isinstance(r, RaggedTensor) for r in self._rows) and len({r.shape for r in rows}) == 1:
            return np.stack(rows)
        out = np.empty(len(rows), dtype=object)
        out[:] = rows
        return out

    def to_tensor(self, default_value=None, name=None, shape=None):
        """The rows padded (or cut, to `shape`) into one dense array."""
        dims = _max_dims(self)
        if shape is not None:
            dims = [d if s is None or s == -1 else int(s) for d, s in zip(dims, tuple(shape), strict=False)] + \
                dims[len(tuple(shape)):]
        dtype = _np_dtype(self.dtype)
        fill = default_value if default_value is not None else (b"" if self.dtype == "string" else 0)
        out = np.full(dims, fill, dtype=dtype)
        _fill(out, self)
        return _wrap(out)

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self):
        return iter([r if isinstance(r, RaggedTensor) else _wrap(np.asarray(r)) for r in self._rows])

    def __getitem__(self, i):
        if isinstance(i, (int, np.integer)):
            r = self._rows[i]
            return r if isinstance(r, RaggedTensor) else _wrap(np.asarray(r))
        if isinstance(i, slice):
            return RaggedTensor(self._rows[i], self.dtype)
        raise TypeError(f"RaggedTensor (host stand-in) is indexed by a row number or a slice of rows, received "
                        f"{i!r}; call .to_tensor() first for other indexing.")

    def __repr__(self) -> str:
        return f"<RaggedTensor {self.to_list()!r}>"


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None, row_splits_dtype="int64"):
    """``tf.ragged.constant``: a RaggedTensor of the nested lists `pylist` (see the module docstring)."""
    if ragged_rank is not None or inner_shape is not None:
        from flexflow_keras.errors import ArgumentError

        raise ArgumentError("tf.ragged.constant(ragged_rank=..., inner_shape=...) is not supported under "
                            "`python -m flexflow_keras`: every nested list level is ragged here. Drop the "
                            "argument, or build the padded array with NumPy.")
    if not isinstance(pylist, (list, tuple, np.ndarray)):
        raise ValueError(f"tf.ragged.constant expects a nested list (pylist); received {type(pylist).__name__}.")
    leaves = list(_leaves(pylist))
    kind = dtype if dtype is not None else _leaf_dtype(leaves)
    kind = getattr(kind, "name", kind)
    return _rows(pylist, "string" if kind in ("string", str, bytes) else str(np.dtype(kind)))


def _leaves(x):
    for v in x:
        if isinstance(v, (list, tuple, np.ndarray)):
            yield from _leaves(v)
        else:
            yield v


def _leaf_dtype(leaves: list) -> str:
    if not leaves:
        return "float32"
    if all(isinstance(v, (str, bytes, np.str_, np.bytes_)) for v in leaves):
        return "string"
    if all(isinstance(v, (bool, np.bool_)) for v in leaves):
        return "bool"
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in leaves):
        return "int32" if all(-2**31 <= int(v) < 2**31 for v in leaves) else "int64"
    return "float32"


def _rows(pylist, dtype: str) -> RaggedTensor:
    rows = []
    for row in pylist:
        if any(isinstance(v, (list, tuple, np.ndarray)) for v in row):
            rows.append(_rows(row, dtype))
        elif dtype == "string":
            out = np.empty(len(row), dtype=object)
            out[:] = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in row]
            rows.append(out)
        else:
            rows.append(np.asarray(row, dtype=dtype))
    return RaggedTensor(rows, dtype)


def _np_dtype(name: str):
    return object if name == "string" else np.dtype(name)


def _dtype_name(arr: np.ndarray) -> str:
    return "string" if arr.dtype.kind in "OSU" else arr.dtype.name


def _max_dims(rt: RaggedTensor) -> list:
    dims = [len(rt._rows)]
    inner: list = []
    for r in rt._rows:
        sub = _max_dims(r) if isinstance(r, RaggedTensor) else list(np.shape(r))
        inner = [max(a, b) for a, b in zip(inner, sub, strict=False)] + sub[len(inner):] if inner else sub
    return dims + (inner or [0])


def _fill(out: np.ndarray, rt: RaggedTensor) -> None:
    for i, r in enumerate(rt._rows[:out.shape[0]]):
        if isinstance(r, RaggedTensor):
            _fill(out[i], r)
        else:
            r = np.asarray(r)
            idx = tuple(slice(0, min(a, b)) for a, b in zip(r.shape, out.shape[1:], strict=False))
            out[(i,) + idx] = r[idx]


def _wrap(arr: np.ndarray):
    from flexflow_keras.data.dataset import as_tensor

    return as_tensor(arr)


__all__ = ["RaggedTensor", "constant"]
