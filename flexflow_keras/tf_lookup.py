"""`tf.lookup.StaticHashTable` and `tf.lookup.KeyValueTensorInitializer` under ``python -m flexflow_keras``.

A static table maps keys (strings or integers) to values, with a default for missing keys. Its lookup
runs on the host, with NumPy: on arrays at once, and on a symbolic tensor (a string Input, as in
keras.io's mixed-dimension embedding: ``self.vocab_to_block.lookup(inputs)`` in a layer's call) as a host
step in front of the model's graph (`TableLookup`, a host layer: layers/host_prefix.py), whose output the
graph reads as one of its inputs. As in TensorFlow, the keys and values take the dtypes
``tf.convert_to_tensor`` gives them (Python ints: int32, floats: float32, strings: string) unless
``key_dtype`` / ``value_dtype`` say otherwise; a key is matched by equality, strings as UTF-8 bytes.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError, DataError
from flexflow_keras.layers.host_layer import HostLayer, as_host_array, wrap_host_result
from flexflow_keras.ops.graph import KerasTensor

_PY_DTYPES = {"int64": "int32", "float64": "float32"}


def _dtype_name(dtype) -> str:
    name = getattr(dtype, "name", None) or str(dtype)
    return "string" if name in ("string", "str", "object") else str(np.dtype(name))


def _tensor_dtype(values: np.ndarray, given) -> str:
    if given is not None:
        return _dtype_name(given)
    if values.dtype.kind in "OUS":
        return "string"
    return _PY_DTYPES.get(str(values.dtype), str(values.dtype))


def _key(v):
    return v.encode("utf-8") if isinstance(v, str) else (bytes(v) if isinstance(v, bytes | np.bytes_) else v)


class KeyValueTensorInitializer:
    """`tf.lookup.KeyValueTensorInitializer(keys, values, key_dtype=None, value_dtype=None)`: the table's
    contents, two equally long 1-D lists or arrays."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        keys, values = np.asarray(keys, dtype=object if _is_text(keys) else None), np.asarray(values)
        if keys.ndim != 1 or values.ndim != 1 or len(keys) != len(values):
            raise ArgumentError(f"tf.lookup.KeyValueTensorInitializer expects keys and values as two 1-D lists of "
                                f"the same length; received shapes {keys.shape} and {values.shape}. Give one "
                                f"value per key.")
        self.key_dtype = _tensor_dtype(keys, key_dtype)
        self.value_dtype = _tensor_dtype(values, value_dtype)
        self.keys = keys
        self.values = values.astype(object if self.value_dtype == "string" else self.value_dtype)


def _is_text(values) -> bool:
    arr = np.asarray(values, dtype=object).reshape(-1)
    return bool(arr.size) and isinstance(arr[0], str | bytes)


class StaticHashTable:
    """`tf.lookup.StaticHashTable(initializer, default_value)`: ``lookup(keys)`` maps each key to its value,
    missing keys to `default_value`, in the keys' shape (see the module docstring)."""

    def __init__(self, initializer, default_value, name=None, experimental_is_anonymous=False):
        if not isinstance(initializer, KeyValueTensorInitializer):
            raise ArgumentError(f"tf.lookup.StaticHashTable expects a tf.lookup.KeyValueTensorInitializer, "
                                f"received {type(initializer).__name__}; build one from your keys and values.")
        self.key_dtype, self.value_dtype = initializer.key_dtype, initializer.value_dtype
        self.default_value = np.asarray(default_value, dtype=object if self.value_dtype == "string"
                                        else self.value_dtype)
        self._table = {_key(k): v for k, v in zip(initializer.keys.tolist(), initializer.values.tolist(),
                                                  strict=True)}
        self.name = name
        self._layer = None

    def size(self) -> int:
        """The number of keys."""
        return len(self._table)

    def export(self):
        """(keys, values) as arrays."""
        keys = list(self._table)
        values = np.asarray(list(self._table.values()), dtype=object if self.value_dtype == "string"
                            else self.value_dtype)
        return np.asarray(keys, dtype=object if self.key_dtype == "string" else self.key_dtype), values

    def lookup(self, keys, name=None):
        """The values of `keys` (an array, or a symbolic tensor of the model's inputs: a host step)."""
        if isinstance(keys, KerasTensor):
            if self._layer is None:
                self._layer = TableLookup(self, name=self.name)
            return self._layer(keys)
        return wrap_host_result(self.lookup_array(keys))

    def lookup_array(self, keys) -> np.ndarray:
        arr = as_host_array(keys, _Who(self))
        if (arr.dtype.kind in "OUS") != (self.key_dtype == "string"):
            raise DataError(f"tf.lookup.StaticHashTable has {self.key_dtype} keys; lookup received "
                            f"{'strings' if arr.dtype.kind in 'OUS' else arr.dtype}. Look up keys of the table's "
                            f"dtype.")
        flat = [self._table.get(_key(k), None) for k in arr.reshape(-1).tolist()]
        out = np.asarray([self.default_value.item() if v is None else v for v in flat],
                         dtype=object if self.value_dtype == "string" else self.value_dtype)
        return out.reshape(arr.shape)


class _Who:
    def __init__(self, table):
        self.name = table.name or "static_hash_table"


class TableLookup(HostLayer):
    """A `StaticHashTable`'s lookup as a host step (the table's values, in the keys' shape)."""

    def __init__(self, table: StaticHashTable, **kwargs):
        super().__init__(**kwargs)
        self.table = table

    def host_call(self, inputs):
        return self.table.lookup_array(inputs)

    def output_dtype(self) -> str:
        return self.table.value_dtype

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)
