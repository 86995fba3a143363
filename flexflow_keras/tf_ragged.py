"""`RaggedTensor`: what `tf.strings.split` returns for an array of strings under `python -m flexflow_keras`
(a row of pieces per string, rows of different lengths), on the host, for dataset maps such as keras.io's
``tf.strings.to_number(tf.strings.split(ratings, ",")).to_tensor()``.

It holds its rows as NumPy arrays (or, for deeper nesting, as RaggedTensors) and answers the calls scripts
make on TensorFlow's: `to_tensor` (padded with `default_value`, b"" or 0, as TensorFlow pads; `shape`
cuts or pads to a size), `to_list`, `row_lengths`, `nrows`, `flat_values`, `numpy`, `shape`, `dtype`,
`len`, iteration and indexing by row. Element-wise tf.strings functions map over it (`map_values`).
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
        out = np.empty(len(self._rows), dtype=object)
        out[:] = [r.numpy() if isinstance(r, RaggedTensor) else np.asarray(r) for r in self._rows]
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


__all__ = ["RaggedTensor"]
