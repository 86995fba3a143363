"""`StringLookup` and `IntegerLookup`: vocabularies that map tokens to integer ids (and back), with Keras 3's
indices, `adapt`, output modes and configs. They run on the host, on NumPy arrays, as Keras 3 runs them
outside TensorFlow: in the data pipeline (``ds.map(lambda x, y: (lookup(x), y))``), on arrays before
`fit`, or as the first layers of a model whose inputs are strings (`layers/host_prefix.py`).

Indices, as Keras': the mask token (when given, int mode only) is 0, then `num_oov_indices` out-of-
vocabulary ids, then the vocabulary. `adapt` orders tokens by count, most frequent first, ties in
reverse byte order (as TensorFlow's sorted export); `max_tokens` counts the reserved ids. Output modes:
"int" (int64 ids, the input's shape), "one_hot", "multi_hot", "count" (int64) and "tf_idf" (float32,
counts times the inverse document frequency ``log(1 + docs / (1 + docs with the token))``; an
out-of-vocabulary token weighs the mean of the vocabulary's). `invert=True` maps ids back to tokens
(bytes for strings, as TensorFlow's `.numpy()` gives them).
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np

from flexflow_keras.errors import ArgumentError, DataError
from flexflow_keras.layers.host_layer import HostLayer, as_host_array, iterate_adapt_data
from flexflow_keras.tf_ragged import RaggedTensor

OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")


class IndexLookup(HostLayer):
    """The shared machinery of `StringLookup` and `IntegerLookup` (see the module docstring)."""

    _kind = "token"

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=None, vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", pad_to_max_tokens=False, sparse=False,
                 vocabulary_size=None, oov_method=None, salt=None, **kwargs):
        # vocabulary_size (derived from the vocabulary), oov_method and salt are in Keras' saved configs
        super().__init__(**kwargs)
        who = f"{type(self).__name__} '{self.name}'"
        # Keras 2's names, which Keras 3 still takes
        output_mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(output_mode, output_mode)
        if output_mode not in OUTPUT_MODES:
            raise ArgumentError(f"{who}: output_mode must be one of {OUTPUT_MODES}, received {output_mode!r}.")
        if sparse:
            raise ArgumentError(f"{who}: sparse=True is not supported (flexflow_keras has no sparse tensors); "
                             f"leave sparse=False for a dense output.")
        if invert and output_mode != "int":
            raise ArgumentError(f"{who}: invert=True needs output_mode='int', received output_mode={output_mode!r}.")
        if idf_weights is not None and output_mode != "tf_idf":
            raise ArgumentError(f"{who}: idf_weights are only used with output_mode='tf_idf', received "
                             f"output_mode={output_mode!r}.")
        num_oov_indices = int(num_oov_indices)
        if num_oov_indices < 0:
            raise ArgumentError(f"{who}: num_oov_indices must be 0 or more, received {num_oov_indices}.")
        if num_oov_indices > 1 and self._kind == "string":
            raise ArgumentError(f"{who}: num_oov_indices={num_oov_indices} hashes unknown strings into buckets with "
                             f"TensorFlow's FarmHash, which flexflow_keras does not reproduce; use "
                             f"num_oov_indices=1 (or 0 when every input is in the vocabulary).")
        if max_tokens is not None and int(max_tokens) <= 1:
            raise ArgumentError(f"{who}: if set, max_tokens must be greater than 1, received max_tokens={max_tokens}.")
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.num_oov_indices = num_oov_indices
        self.mask_token = None if mask_token is None else self._token(mask_token)
        self.oov_token = self._token(oov_token)
        self.invert = bool(invert)
        self.output_mode = output_mode
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self.sparse = False
        self._vocab: list = []
        self._index: dict = {}
        self._idf: np.ndarray | None = None
        self._called_width: int | None = None
        self._given_vocabulary = vocabulary
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)
        elif idf_weights is not None:
            raise ArgumentError(f"{who}: idf_weights need a vocabulary of the same length; pass vocabulary= too.")

    # --- tokens -------------------------------------------------------------------------------------------
    def _token(self, value):
        """`value` as this lookup's token type."""
        raise NotImplementedError(f"{type(self).__name__} must implement _token() (a base-class hook)")

    def _tokens(self, array: np.ndarray) -> np.ndarray:
        """An array of inputs as tokens (an object array of str for strings, int64 for integers)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _tokens() (a base-class hook)")

    def _reserved(self) -> list:
        """The tokens before the vocabulary: the mask (int mode) and the OOV token(s)."""
        mask = [self.mask_token] if self.mask_token is not None and self.output_mode == "int" else []
        return mask + [self.oov_token] * self.num_oov_indices

    # --- the vocabulary -----------------------------------------------------------------------------------
    def get_vocabulary(self, include_special_tokens=True) -> list:
        """The tokens in index order (with the mask and OOV tokens unless include_special_tokens=False)."""
        return (self._reserved() if include_special_tokens else []) + list(self._vocab)

    def vocabulary_size(self) -> int:
        """The number of ids: the vocabulary and the reserved tokens."""
        return len(self._reserved()) + len(self._vocab)

    def _read_vocabulary(self, vocabulary) -> list:
        if isinstance(vocabulary, (str, os.PathLike)) and not isinstance(vocabulary, bytes):
            path = os.fspath(vocabulary)
            if not os.path.isfile(path):
                raise DataError(f"{type(self).__name__} '{self.name}': vocabulary file {path!r} "
                                f"{'is a directory' if os.path.isdir(path) else 'does not exist'}; give a text "
                                f"file with one token per line, or a list of tokens.")
            with open(path, encoding="utf-8") as f:
                vocabulary = [line.rstrip("\n").rstrip("\r") for line in f]
        return [self._token(v) for v in np.asarray(vocabulary, dtype=object).ravel().tolist()]

    def set_vocabulary(self, vocabulary, idf_weights=None) -> None:
        """Replace the vocabulary (a list, array or a file with one token per line; reserved tokens at its
        start are kept in place, as Keras does) and, for tf_idf, the idf weights."""
        who = f"{type(self).__name__} '{self.name}'"
        tokens = self._read_vocabulary(vocabulary)
        reserved = self._reserved()
        if tokens[:len(reserved)] == reserved and reserved:
            tokens = tokens[len(reserved):]
            if idf_weights is not None and len(idf_weights) == len(tokens) + len(reserved):
                idf_weights = list(idf_weights)[len(reserved):]
        seen, repeated = set(), []
        for t in tokens:
            if t in seen:
                repeated.append(t)
            seen.add(t)
        if repeated:
            raise ArgumentError(f"{who}: the vocabulary repeats {sorted(set(repeated), key=str)[:10]}; give each "
                             f"token once.")
        specials = {self.oov_token} | ({self.mask_token} if self.mask_token is not None else set())
        clash = [t for t in tokens if t in specials]
        if clash:
            raise ArgumentError(f"{who}: the vocabulary contains the reserved token(s) {clash}; they take ids of "
                             f"their own (mask_token={self.mask_token!r}, oov_token={self.oov_token!r}).")
        if self.max_tokens is not None and len(tokens) + len(reserved) > self.max_tokens:
            raise ArgumentError(f"{who}: the vocabulary has {len(tokens) + len(reserved)} ids with the reserved "
                             f"ones, more than max_tokens={self.max_tokens}.")
        idf = None
        if self.output_mode == "tf_idf":
            if idf_weights is None:
                raise ArgumentError(f"{who}: output_mode='tf_idf' with a given vocabulary needs idf_weights (one "
                                 f"per token), or call adapt() to compute them.")
            w = np.asarray(idf_weights, np.float32).ravel()
            if w.size != len(tokens):
                raise ArgumentError(f"{who}: idf_weights has {w.size} values for a vocabulary of {len(tokens)} "
                                 f"tokens; give one weight per token.")
            idf = w
        self._install(tokens, idf)

    def _install(self, tokens: list, idf: np.ndarray | None) -> None:
        who = f"{type(self).__name__} '{self.name}'"
        size = len(self._reserved()) + len(tokens)
        if self._called_width is not None and self.output_mode == "tf_idf" and not self.pad_to_max_tokens \
                and size != self._called_width:
            raise ArgumentError(f"{who}: with output_mode='tf_idf' and pad_to_max_tokens=False the vocabulary "
                               f"size cannot change after the layer was called (it was {self._called_width}, the "
                               f"new one is {size}); make a new layer.")
        self._vocab = list(tokens)
        first = len(self._reserved())
        self._index = {t: first + i for i, t in enumerate(self._vocab)}
        if idf is not None:  # the reserved ids weigh the vocabulary's mean (OOV), the mask nothing
            mean = float(idf.mean()) if idf.size else 0.0
            self._idf = np.concatenate([np.full(first, mean, np.float32), idf.astype(np.float32)])
        else:
            self._idf = None

    def adapt(self, data, batch_size=None, steps=None) -> None:
        """Build the vocabulary from `data` (an array, a list, or a dataset of batches): tokens by count,
        most frequent first; for tf_idf also the document frequencies (a document is a row)."""
        counts: Counter = Counter()
        doc_counts: Counter = Counter()
        docs = 0
        for batch in iterate_adapt_data(data, self, steps):
            if isinstance(batch, RaggedTensor):  # tf.ragged.constant's rows: one document each
                rows = [list(t.reshape(-1)) for t in self._ragged_tokens(batch)]
            else:
                rows = self._documents(self._tokens(as_host_array(batch, self)))
            for row in rows:
                row = [t for t in row if t != self.mask_token]
                counts.update(row)
                if self.output_mode == "tf_idf":
                    doc_counts.update(set(row))
            docs += len(rows)
        self._adapt_counts(counts, doc_counts, docs)

    def _documents(self, tokens: np.ndarray) -> list:
        """The rows of `tokens` (documents for tf_idf; a scalar or 1-D input is one document each token)."""
        if tokens.ndim == 0:
            return [[tokens.item()]]
        if tokens.ndim == 1:
            return [[t] for t in tokens.tolist()]
        return [list(r) for r in tokens.reshape(tokens.shape[0], -1).tolist()]

    def _adapt_counts(self, counts: Counter, doc_counts: Counter, docs: int) -> None:
        specials = {self.oov_token} | ({self.mask_token} if self.mask_token is not None else set())
        items = [(t, c) for t, c in counts.items() if t not in specials]
        items.sort(key=lambda tc: (tc[1], _order_key(tc[0])), reverse=True)
        tokens = [t for t, _ in items]
        if self.max_tokens is not None:
            tokens = tokens[:max(0, self.max_tokens - len(self._reserved()))]
        idf = None
        if self.output_mode == "tf_idf":
            idf = np.log1p(docs / (1.0 + np.asarray([doc_counts[t] for t in tokens], np.float64))).astype(np.float32)
        self._install(tokens, idf)

    # --- calls ----------------------------------------------------------------------------------------------
    def _width(self) -> int:
        return self.max_tokens if self.pad_to_max_tokens and self.max_tokens else self.vocabulary_size()

    def _lookup(self, tokens: np.ndarray) -> np.ndarray:
        """int64 ids of a token array (mask -> 0, unknown -> the OOV id)."""
        who = f"{type(self).__name__} '{self.name}'"
        flat = tokens.reshape(-1)
        if flat.size == 0:
            return np.zeros(tokens.shape, np.int64)
        uniq, inverse = np.unique(flat, return_inverse=True)
        first_oov = 1 if self.mask_token is not None and self.output_mode == "int" else 0
        ids = np.empty(len(uniq), np.int64)
        unknown = []
        for k, t in enumerate(uniq.tolist()):
            i = self._index.get(t)
            if i is None:
                if self.mask_token is not None and t == self.mask_token:
                    i = 0 if self.output_mode == "int" else -1
                elif self.num_oov_indices == 0:
                    unknown.append(t)
                    i = -1
                else:
                    i = first_oov + self._oov_bucket(t)
            ids[k] = i
        if unknown:
            raise DataError(f"{who}: with num_oov_indices=0 every input must be in the vocabulary; received "
                            f"{unknown[:5]}{' ...' if len(unknown) > 5 else ''}. Use num_oov_indices=1 to map "
                            f"unknown tokens to an OOV id.")
        return ids[inverse].reshape(tokens.shape)

    def _oov_bucket(self, token) -> int:
        return 0

    def _encode(self, ids: np.ndarray, rank_one_is_batch: bool = False):
        """ids in the layer's output mode (ids of -1, a dropped mask, count nowhere)."""
        mode = self.output_mode
        if mode == "int":
            return ids
        width = self._width()
        self._called_width = self._called_width or self.vocabulary_size()
        if mode == "one_hot":
            if ids.ndim >= 1 and ids.shape[-1] == 1:
                ids = ids[..., 0]
            out = np.zeros(ids.shape + (width,), np.int64)
            valid = (ids >= 0) & (ids < width)
            np.put_along_axis(out, np.where(valid, ids, 0)[..., None], valid[..., None].astype(np.int64), axis=-1)
            return out
        single = ids.ndim == 0 or (ids.ndim == 1 and not rank_one_is_batch)
        rows = ids.reshape(1, -1) if single else ids.reshape(ids.shape[0], -1)
        counts = np.zeros((rows.shape[0], width), np.int64)
        r, c = np.nonzero((rows >= 0) & (rows < width))
        np.add.at(counts, (r, rows[r, c]), 1)
        if mode == "multi_hot":
            out = np.minimum(counts, 1)
        elif mode == "count":
            out = counts
        else:
            idf = np.zeros(width, np.float32)
            if self._idf is not None:
                n = min(width, len(self._idf))
                idf[:n] = self._idf[:n]
            out = counts.astype(np.float32) * idf
        return out[0] if single else out

    def host_call(self, inputs):
        if isinstance(inputs, RaggedTensor):
            return self._ragged_call(inputs)
        if self.invert:
            return self._invert(np.asarray(inputs))
        return self._encode(self._lookup(self._tokens(as_host_array(inputs, self))))

    def _ragged_tokens(self, ragged: RaggedTensor) -> list:
        """The tokens of each row of a RaggedTensor of rank 2 (rows of tokens)."""
        rows = [np.asarray(r) for r in ragged]
        if any(isinstance(r, RaggedTensor) or r.ndim != 1 for r in ragged):
            raise DataError(f"{type(self).__name__} '{self.name}' reads a RaggedTensor of rows of tokens (rank 2); "
                            f"received one of rank {ragged.ndim} or more. Flatten the inner rows first "
                            f"(.merge_dims or .flat_values), or pad it with .to_tensor().")
        return [self._tokens(r) for r in rows]

    def _ragged_call(self, ragged: RaggedTensor):
        """A RaggedTensor's rows, as TensorFlow's lookup layers answer them: "int" and invert a RaggedTensor of
        the same rows, "multi_hot" / "count" / "tf_idf" one dense row per input row."""
        if self.invert:
            return ragged.map_values(lambda r: self._invert(np.asarray(r)))
        ids = [self._lookup(t) for t in self._ragged_tokens(ragged)]
        if self.output_mode == "int":
            return RaggedTensor(ids, "int64")
        if self.output_mode == "one_hot":
            raise DataError(f"{type(self).__name__} '{self.name}' (output_mode='one_hot') of a RaggedTensor is not "
                            f"supported: pad it with .to_tensor() first, or use output_mode='multi_hot' for one "
                            f"row of each input row.")
        width = self._width()
        rows = [self._encode(r) for r in ids]
        out = np.stack(rows) if rows else np.zeros((0, width), np.float32 if self.output_mode == "tf_idf" else np.int64)
        return out

    def _invert(self, ids: np.ndarray):
        table = self.get_vocabulary()
        ids = np.asarray(ids)
        if ids.dtype.kind == "f":
            ids = ids.astype(np.int64)
        if ids.dtype.kind not in "iu":
            raise DataError(f"{type(self).__name__} '{self.name}' (invert=True) maps integer ids back to tokens; "
                            f"received an array of {ids.dtype}.")
        flat = ids.reshape(-1)
        oov = self.oov_token
        out = [table[i] if 0 <= i < len(table) else oov for i in flat.tolist()]
        return self._token_array(out, ids.shape)

    def _token_array(self, tokens: list, shape) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must implement _token_array() (a base-class hook)")

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if self.output_mode == "int":
            return shape
        width = self._width() if self._vocab or self.pad_to_max_tokens else None
        if self.output_mode == "one_hot":
            return (shape[:-1] if shape and shape[-1] == 1 else shape) + (width,)
        return (shape[0] if len(shape) > 1 else None, width) if shape else (width,)

    def output_dtype(self) -> str:
        if self.invert:
            return self._inverted_dtype
        return "float32" if self.output_mode == "tf_idf" else "int64"

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"invert": self.invert, "max_tokens": self.max_tokens,
                       "num_oov_indices": self.num_oov_indices, "oov_token": _plain(self.oov_token),
                       "mask_token": _plain(self.mask_token), "output_mode": self.output_mode,
                       "sparse": False, "pad_to_max_tokens": self.pad_to_max_tokens,
                       "idf_weights": None if self._idf is None else
                       self._idf[len(self._reserved()):].tolist(),
                       "vocabulary": [_plain(t) for t in self._vocab] if self._vocab else None,
                       "vocabulary_size": self.vocabulary_size()})
        return config


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _order_key(token):
    """Ties in adapt's order: TensorFlow sorts the exported tokens by their bytes (strings) or value."""
    return token.encode("utf-8") if isinstance(token, str) else token


class StringLookup(IndexLookup):
    """Map strings to integer ids with a vocabulary (Keras 3's `keras.layers.StringLookup`).

    Args:
        max_tokens: the most ids, reserved ones included (None: no limit).
        num_oov_indices: ids for tokens outside the vocabulary (0 or 1 here).
        mask_token: a token that maps to 0 (int mode), e.g. "" for padding; None for no mask.
        oov_token: the token `invert` gives for OOV ids.
        vocabulary: a list or array of tokens, or a text file with one per line.
        idf_weights: with output_mode="tf_idf" and a vocabulary, one weight per token.
        invert: map ids back to tokens.
        output_mode: "int", "one_hot", "multi_hot", "count" or "tf_idf".
        pad_to_max_tokens: in the non-int modes, output max_tokens columns.
        encoding: the text encoding of bytes inputs ("utf-8").
    """

    _kind = "string"
    _inverted_dtype = "string"

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]", vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", pad_to_max_tokens=False, sparse=False,
                 encoding="utf-8", **kwargs):
        self.encoding = encoding
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary, idf_weights, invert,
                         output_mode, pad_to_max_tokens, sparse, **kwargs)

    def _token(self, value):
        if isinstance(value, bytes):
            return value.decode(self.encoding)
        return str(value)

    def _tokens(self, array: np.ndarray) -> np.ndarray:
        if array.dtype.kind == "U":
            return array.astype(object)
        if array.dtype.kind in "SO":
            flat = [v.decode(self.encoding) if isinstance(v, bytes) else str(v) for v in array.reshape(-1).tolist()]
            return np.asarray(flat + [None], dtype=object)[:-1].reshape(array.shape)
        raise DataError(f"StringLookup '{self.name}' maps strings to ids; received an array of {array.dtype}. "
                        f"Use IntegerLookup for integer tokens.")

    def _token_array(self, tokens: list, shape) -> np.ndarray:
        enc = self.encoding
        return np.asarray([t.encode(enc) for t in tokens] + [None], dtype=object)[:-1].reshape(shape)

    def get_config(self) -> dict:
        config = super().get_config()
        config["encoding"] = self.encoding
        return config


class IntegerLookup(IndexLookup):
    """Map integer tokens to contiguous ids with a vocabulary (Keras 3's `keras.layers.IntegerLookup`).

    Args:
        max_tokens, vocabulary, idf_weights, invert, output_mode, pad_to_max_tokens: as `StringLookup`.
        num_oov_indices: ids for values outside the vocabulary; with more than one, a value goes to
            ``value mod num_oov_indices`` (Keras' "floormod").
        mask_token: an integer that maps to 0 (int mode), e.g. 0; None for no mask.
        oov_token: the value `invert` gives for OOV ids (-1).
        vocabulary_dtype: "int64" (or "int32").
    """

    _kind = "integer"
    _inverted_dtype = "int64"

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1, output_mode="int",
                 sparse=False, pad_to_max_tokens=False, vocabulary=None, vocabulary_dtype="int64", idf_weights=None,
                 invert=False, **kwargs):
        if vocabulary_dtype not in ("int64", "int32"):
            raise ArgumentError(f"IntegerLookup: vocabulary_dtype must be 'int64' or 'int32', received "
                             f"{vocabulary_dtype!r}.")
        self.vocabulary_dtype = vocabulary_dtype
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary, idf_weights, invert,
                         output_mode, pad_to_max_tokens, sparse, **kwargs)

    def _token(self, value):
        if isinstance(value, (str, bytes)):
            raise ArgumentError(f"IntegerLookup '{self.name}' takes integer tokens; received {value!r}. Use "
                             f"StringLookup for strings.")
        return int(value)

    def _tokens(self, array: np.ndarray) -> np.ndarray:
        if array.dtype.kind not in "iuf b":
            raise DataError(f"IntegerLookup '{self.name}' maps integers to ids; received an array of "
                            f"{array.dtype}. Use StringLookup for strings.")
        return array.astype(np.int64)

    def _oov_bucket(self, token) -> int:
        return int(token) % self.num_oov_indices if self.num_oov_indices > 1 else 0

    def _token_array(self, tokens: list, shape) -> np.ndarray:
        return np.asarray(tokens, np.int64).reshape(shape)

    def get_config(self) -> dict:
        config = super().get_config()
        config["vocabulary_dtype"] = self.vocabulary_dtype
        return config
