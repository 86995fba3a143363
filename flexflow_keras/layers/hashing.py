"""`Hashing` and `HashedCrossing`: values (or crosses of values) to hash bins, bit for bit as Keras 3 computes
them with TensorFlow's string ops. Host layers (`layers/host_layer.py`): they run on NumPy arrays, in the
data pipeline, on arrays before `fit`, or in front of a model on its `Input`s (`layers/host_prefix.py`).

Hashing, as `tf.strings.to_hash_bucket_fast` / `_strong`: integers become their decimal strings
(`tf.strings.as_string`; floats are truncated to int64 first, booleans are "true"/"false"), then the
UTF-8 bytes are hashed with FarmHash Fingerprint64, or with SipHash-2-4 keyed by the two salt words when a
salt is given, modulo the number of bins. With a `mask_value` (and num_bins > 1), values equal to it go to
bin 0 and the others to 1 + hash mod (num_bins - 1).

HashedCrossing, as `tf.sparse.cross_hashed` with its default key 0xDECAFCAFFE: each feature is its
Fingerprint64 (strings) or its int64 value, folded left to right into the key with `FingerprintCat64`,
modulo the number of bins. The hashes themselves are in `layers/string_hash.py`; the output modes in
`layers/bin_encoding.py`. Each distinct value is hashed once (np.unique), so repeated values cost little.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras import backend
from flexflow_keras.errors import ArgumentError, DataError
from flexflow_keras.layers import bin_encoding, string_hash
from flexflow_keras.layers.host_layer import HostLayer, as_host_array

_CROSS_KEY = 0xDECAFCAFFE  # tf.sparse.cross_hashed's default hash_key
_INT64_MIN = np.iinfo(np.int64).min


def _who(layer) -> str:
    return f"{type(layer).__name__} '{layer.name}'"


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _unique(flat: np.ndarray):
    """(distinct values as a list, inverse indices) of a 1-D array; object arrays by a dict pass (their
    elements may not be mutually orderable), the others by np.unique."""
    if flat.dtype.kind != "O":
        uniq, inverse = np.unique(flat, return_inverse=True)
        return uniq.tolist(), inverse.reshape(-1)
    index: dict = {}
    inverse = np.fromiter((index.setdefault(v, len(index)) for v in flat.tolist()), np.int64, flat.size)
    return list(index), inverse


def _kind(arr: np.ndarray, who: str) -> str:
    """'string', 'int', 'float' or 'bool': how TensorFlow would read the array."""
    if arr.dtype.kind in "US":
        return "string"
    if arr.dtype.kind == "O":
        others = {type(v).__name__ for v in arr.reshape(-1).tolist() if not isinstance(v, (str, bytes))}
        if not others:
            return "string"
        raise DataError(f"{who} takes strings or numbers; received an object array holding {sorted(others)}. "
                        f"Give an array of str or bytes, or a numeric array.")
    if arr.dtype.kind == "b":
        return "bool"
    if arr.dtype.kind in "iu":
        return "int"
    if arr.dtype.kind == "f":
        return "float"
    raise DataError(f"{who} takes strings or numbers; received an array of {arr.dtype}.")


def _as_bytes(values: list, kind: str) -> list:
    """Distinct values as the byte strings TensorFlow hashes (`tf.strings.as_string` for numbers)."""
    if kind == "string":
        return [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]
    if kind == "bool":
        return [b"true" if v else b"false" for v in values]
    if kind == "float":  # cast to int64 first; NaN, inf and out-of-range values give int64's minimum, as on x86
        finite = np.asarray(values, np.float64)
        ok = np.isfinite(finite) & (finite >= -(2.0**63)) & (finite < 2.0**63)
        ints = np.where(ok, np.trunc(np.where(ok, finite, 0.0)), 0.0).astype(np.int64)
        return [str(int(v)).encode() if k else str(_INT64_MIN).encode() for v, k in zip(ints, ok, strict=True)]
    return [str(int(v)).encode() for v in values]


class Hashing(HostLayer):
    """Hash strings or integers into `num_bins` bins (Keras 3's `keras.layers.Hashing`).

    Args:
        num_bins: the number of bins, the mask's bin included.
        mask_value: a value that goes to bin 0 (the others to bins 1..num_bins-1); None for no mask.
        salt: None for FarmHash Fingerprint64; an int or a pair of ints for SipHash-2-4 keyed by them
            (an int k is the pair (k, k)).
        output_mode: "int" (bin ids, int64), "one_hot", "multi_hot" or "count" (float32 by default).
        sparse: must stay False (flexflow_keras has no sparse tensors).

    Example:
        >>> keras.layers.Hashing(num_bins=3)([["A"], ["B"], ["C"]])   # [[1], [0], [1]], as Keras
    """

    OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count")

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False, **kwargs):
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == "int" else backend.floatx()
        super().__init__(**kwargs)
        who = _who(self)
        if isinstance(num_bins, bool) or not isinstance(num_bins, (int, float, np.integer, np.floating)) \
                or not np.isfinite(num_bins) or num_bins <= 0 or int(num_bins) != num_bins:  # Keras takes 3.0
            raise ArgumentError(f"{who}: num_bins must be a positive integer, received num_bins={num_bins!r}.")
        if output_mode == "int" and self._dtype not in ("int32", "int64"):
            raise ArgumentError(f"{who}: with output_mode='int' the dtype must be 'int32' or 'int64', received "
                                f"dtype={self._dtype!r}; leave dtype unset for int64 bin ids.")
        if output_mode not in self.OUTPUT_MODES:
            raise ArgumentError(f"{who}: output_mode must be one of {self.OUTPUT_MODES}, received "
                                f"output_mode={output_mode!r}.")
        if sparse:
            raise ArgumentError(f"{who}: sparse=True is not supported (flexflow_keras has no sparse tensors; Keras "
                                f"also refuses it with output_mode='int'); leave sparse=False for a dense output.")
        self.num_bins = num_bins
        self.mask_value = mask_value.item() if isinstance(mask_value, np.generic) else mask_value
        self.output_mode = output_mode
        self.sparse = False
        self.salt = None
        if salt is not None:
            if isinstance(salt, (tuple, list)) and len(salt) == 2:
                self.salt = list(salt)
            elif isinstance(salt, int):
                self.salt = [salt, salt]
            else:
                raise ArgumentError(f"{who}: salt must be an int or a tuple of 2 ints, received salt={salt!r}.")
            if not all(_is_int(s) and -(2**63) <= s < 2**63 for s in self.salt):
                raise ArgumentError(f"{who}: the salt's words must be integers in int64's range (TensorFlow's key "
                                    f"attribute), received salt={salt!r}.")
            self.salt = [int(s) for s in self.salt]

    # --- hashing --------------------------------------------------------------------------------------------
    def _mask_matches(self, uniq: list, kind: str) -> np.ndarray:
        """Which distinct values equal mask_value (compared before any conversion, as tf.equal does)."""
        mask, who = self.mask_value, _who(self)
        if kind == "string":
            if not isinstance(mask, (str, bytes)):
                raise DataError(f"{who}: mask_value={mask!r} is not a string, but the inputs are strings; give a "
                                f"string mask_value (e.g. '').")
            target = mask.encode("utf-8") if isinstance(mask, str) else mask
            return np.asarray([u == target for u in _as_bytes(uniq, kind)], bool)
        if isinstance(mask, (str, bytes)) or (kind in ("int", "bool") and not isinstance(mask, (int, np.integer))):
            raise DataError(f"{who}: mask_value={mask!r} cannot be compared with inputs of kind {kind} (TensorFlow "
                            f"cannot convert it to their dtype); give a mask_value of the inputs' type.")
        return np.asarray(uniq) == mask

    def _bins(self, arr: np.ndarray) -> np.ndarray:
        """int64 bin ids of an array of values, in its shape."""
        kind = _kind(arr, _who(self))
        uniq, inverse = _unique(arr.reshape(-1))
        bins = int(self.num_bins)
        masked = self.mask_value is not None and bins > 1
        if masked:
            bins -= 1
        data = _as_bytes(uniq, kind)
        if self.salt is None:
            hashes = string_hash.fingerprint64(data)
        else:
            hashes = string_hash.siphash(data, *self.salt)
        ids = (hashes % np.uint64(bins)).astype(np.int64)
        if masked:
            ids = np.where(self._mask_matches(uniq, kind), 0, ids + 1)
        return ids[inverse].reshape(arr.shape)

    def host_call(self, inputs):
        arr = as_host_array(inputs, self)
        if self.output_mode == "one_hot":
            if arr.ndim == 0:
                raise DataError(f"{_who(self)} (output_mode='one_hot') needs inputs of rank 1 or more (Keras fails on "
                                f"a scalar too); give [value].")
            if arr.shape[-1] == 1:  # Keras squeezes a last axis of 1 before hashing
                arr = arr[..., 0]
        return bin_encoding.encode(self._bins(arr), self.output_mode, int(self.num_bins), self._dtype)

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if self.output_mode == "one_hot" and shape and shape[-1] == 1:
            shape = shape[:-1]
        return bin_encoding.encoded_shape(shape, self.output_mode, int(self.num_bins))

    def output_dtype(self) -> str:
        return self._dtype

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"num_bins": self.num_bins, "salt": self.salt, "mask_value": self.mask_value,
                       "output_mode": self.output_mode, "sparse": self.sparse})
        return config


class HashedCrossing(HostLayer):
    """Cross two or more categorical features by hashing them together (Keras 3's
    `keras.layers.HashedCrossing`): ``hash(feature_1, feature_2, ...) % num_bins`` per sample.

    Called on a list or tuple of inputs of equal shape, each (), (batch,) or (batch, 1), of strings or
    integers. Args:
        num_bins: the number of bins (0: the raw hash modulo 2**63 - 1, as TensorFlow).
        output_mode: "int" (bin ids, int64) or "one_hot" (float32 by default).
        sparse: must stay False (flexflow_keras has no sparse tensors).

    Example:
        >>> keras.layers.HashedCrossing(num_bins=5)((np.array(["A", "B"]), np.array([101, 101])))  # [1, 4]
    """

    OUTPUT_MODES = ("int", "one_hot")

    def __init__(self, num_bins, output_mode="int", sparse=False, name=None, dtype=None, **kwargs):
        if output_mode == "int" and dtype is None:
            dtype = "int64"
        super().__init__(name=name, dtype=dtype, **kwargs)
        who = _who(self)
        if sparse:
            raise ArgumentError(f"{who}: sparse=True is not supported (flexflow_keras has no sparse tensors); leave "
                                f"sparse=False for a dense output.")
        if output_mode not in self.OUTPUT_MODES:
            raise ArgumentError(f"{who}: output_mode must be one of {self.OUTPUT_MODES}, received "
                                f"output_mode={output_mode!r}.")
        if not _is_int(num_bins) or num_bins < 0:
            raise ArgumentError(f"{who}: num_bins must be an integer >= 0, received num_bins={num_bins!r}.")
        self.num_bins = int(num_bins)
        self.output_mode = output_mode
        self.sparse = False

    def _features(self, inputs) -> list:
        who = _who(self)
        if not isinstance(inputs, (list, tuple)):
            raise DataError(f"{who} is called on a list or tuple of inputs (one per feature), received "
                            f"{type(inputs).__name__}; call it as layer((feature_a, feature_b)).")
        if len(inputs) < 2:
            raise DataError(f"{who} crosses at least two inputs, received {len(inputs)}.")
        arrays = [as_host_array(x, self) for x in inputs]
        shape = arrays[0].shape
        if len(shape) > 2 or (len(shape) == 2 and shape[-1] != 1):
            raise DataError(f"{who}: every input must have shape (), (batch,) or (batch, 1), received {shape}; "
                            f"cross one column of each feature at a time.")
        if any(a.shape != shape for a in arrays[1:]):
            raise DataError(f"{who}: every input must have the same shape, received "
                            f"{[a.shape for a in arrays]}.")
        return arrays

    def _fingerprints(self, arr: np.ndarray) -> np.ndarray:
        """A feature as the uint64 values the cross folds: Fingerprint64 of strings, the int64 of integers."""
        if arr.dtype.kind in "iu":
            return arr.reshape(-1).astype(np.int64).view(np.uint64)
        if arr.dtype.kind in "OSU" and _kind(arr, _who(self)) == "string":
            uniq, inverse = _unique(arr.reshape(-1))
            return string_hash.fingerprint64(_as_bytes(uniq, "string"))[inverse]
        raise DataError(f"{_who(self)}: every input must hold integers or strings, received an array of "
                        f"{arr.dtype}; cast floats or booleans to int first.")

    def host_call(self, inputs):
        arrays = self._features(inputs)
        shape = arrays[0].shape
        hashed = np.full(int(np.prod(shape)), np.uint64(_CROSS_KEY))
        for arr in arrays:
            hashed = string_hash.fingerprint_cat64(hashed, self._fingerprints(arr))
        modulus = self.num_bins if self.num_bins > 0 else 2**63 - 1
        ids = (hashed % np.uint64(modulus)).astype(np.int64).reshape(shape)
        return bin_encoding.encode(ids, self.output_mode, self.num_bins, self._dtype)

    def compute_output_shape(self, input_shape):
        shapes = list(input_shape)
        if len(shapes) < 2 or not all(isinstance(s, (tuple, list)) for s in shapes):
            raise DataError(f"{_who(self)} expects the shapes of a list of at least two inputs, received "
                            f"{input_shape}.")
        return bin_encoding.encoded_shape(tuple(shapes[0]), self.output_mode, self.num_bins)

    def output_dtype(self) -> str:
        return self._dtype

    def get_config(self) -> dict:
        return {"num_bins": self.num_bins, "output_mode": self.output_mode, "sparse": self.sparse,
                "name": self.name, "dtype": self._dtype}
