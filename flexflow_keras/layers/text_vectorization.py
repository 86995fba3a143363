"""`TextVectorization`: strings to token ids or bag-of-words vectors, with Keras 3's standardization,
splitting, n-grams, vocabulary (`adapt`) and output modes. A host layer (`layers/host_layer.py`): it runs
on NumPy arrays of strings, in the data pipeline, on arrays before `fit`, or in front of a model whose
input is a string `Input` (`layers/host_prefix.py`).

As TensorFlow computes it: "lower" lower-cases ASCII letters only (`tf.strings.lower`), punctuation is
``!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'``, "whitespace" splits on runs of ASCII white space, "character" into
code points; `ngrams=n` gives the 1- to n-grams, each width in turn, joined by a space. A callable
standardize gets a NumPy array of str (as Keras 3 hands it outside TensorFlow) and returns one of the
same shape; a callable split gets that array and returns one list of tokens per string. The
vocabulary is a `StringLookup`'s: in "int" mode "" is 0 and "[UNK]" 1; otherwise "[UNK]" is 0.
"""

from __future__ import annotations

import re

import numpy as np

from flexflow_keras.errors import ArgumentError, DataError
from flexflow_keras.layers.host_layer import HostLayer, as_host_array, iterate_adapt_data
from flexflow_keras.layers.index_lookup import OUTPUT_MODES, StringLookup

_PUNCTUATION = re.compile(r"[!\"#$%&()*+,\-./:;<=>?@\[\\\]^_`{|}~']")
_WHITESPACE = re.compile(r"[ \t\n\r\v\f]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_STANDARDIZE = (None, "lower_and_strip_punctuation", "lower", "strip_punctuation")
_SPLIT = (None, "whitespace", "character")


def _text(value, encoding: str) -> str:
    return value.decode(encoding) if isinstance(value, bytes) else str(value)


class TextVectorization(HostLayer):
    """Turn strings into sequences of token ids or into bag-of-words vectors (Keras 3's layer).

    Args:
        max_tokens: the vocabulary's size at most, "" and "[UNK]" included (None: no limit).
        standardize: None, "lower_and_strip_punctuation", "lower", "strip_punctuation", or a callable on
            an array of strings.
        split: None (each string is one token), "whitespace", "character", or a callable.
        ngrams: None, an int n (1- to n-grams) or a tuple of widths.
        output_mode: "int" (ids, int64), "multi_hot", "count" (int64) or "tf_idf" (float32).
        output_sequence_length: in int mode, pad with 0 or truncate every row to this length (else rows
            are padded to the longest of the batch); with ragged=True, truncate only.
        ragged: in int mode, a batch of split strings gives a `RaggedTensor` of each string's ids (tf_ragged.py)
            instead of padded rows; one string, or no split, still gives a dense array (as Keras 3 on
            TensorFlow). Not in a model: its inputs are dense.
        pad_to_max_tokens: in the other modes, output max_tokens columns.
        vocabulary: a list of tokens or a text file with one per line (else call `adapt`).
        idf_weights: with output_mode="tf_idf" and a vocabulary, one weight per token.
        encoding: the encoding of bytes inputs ("utf-8").
    """

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation", split="whitespace", ngrams=None,
                 output_mode="int", output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", vocabulary_size=None, **kwargs):
        super().__init__(**kwargs)  # vocabulary_size: in Keras' saved configs, derived from the vocabulary
        who = f"TextVectorization '{self.name}'"
        # Keras 2's names, which Keras 3 still takes
        output_mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(output_mode, output_mode)
        if not (callable(standardize) or standardize in _STANDARDIZE):
            raise ArgumentError(f"{who}: standardize must be one of {_STANDARDIZE} or a callable, received "
                             f"{standardize!r}.")
        if not (callable(split) or split in _SPLIT):
            raise ArgumentError(f"{who}: split must be one of {_SPLIT} or a callable, received {split!r}.")
        if output_mode not in OUTPUT_MODES or output_mode == "one_hot":
            raise ArgumentError(f"{who}: output_mode must be one of 'int', 'multi_hot', 'count' or 'tf_idf', received "
                             f"{output_mode!r}.")
        if ngrams is not None and not (isinstance(ngrams, int) and ngrams > 0) and not (
                isinstance(ngrams, (tuple, list)) and all(isinstance(n, int) and n > 0 for n in ngrams)):
            raise ArgumentError(f"{who}: ngrams must be None, a positive int or a tuple of positive ints, received "
                             f"{ngrams!r}.")
        if output_sequence_length is not None and output_mode != "int":
            raise ArgumentError(f"{who}: output_sequence_length only applies to output_mode='int', received "
                             f"output_mode={output_mode!r}.")
        if output_sequence_length is not None and int(output_sequence_length) < 1:
            raise ArgumentError(f"{who}: output_sequence_length must be a positive int, received "
                             f"{output_sequence_length!r}.")
        if ragged and output_mode != "int":
            raise ArgumentError(f"{who}: ragged=True only applies to output_mode='int', received ragged={ragged} and "
                             f"output_mode={output_mode!r}.")
        if sparse:
            raise ArgumentError(f"{who}: sparse=True is not supported (flexflow_keras has no sparse tensors).")
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.standardize = standardize
        self.split = split
        self.ngrams = ngrams
        self._widths = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else (
            None if ngrams is None else tuple(ngrams))
        self.output_mode = output_mode
        self.output_sequence_length = None if output_sequence_length is None else int(output_sequence_length)
        self.ragged = bool(ragged)
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self.encoding = encoding
        self._lookup_layer = StringLookup(max_tokens=max_tokens, mask_token="" if output_mode == "int" else None,
                                          vocabulary=vocabulary, idf_weights=idf_weights, output_mode=output_mode,
                                          pad_to_max_tokens=pad_to_max_tokens, encoding=encoding,
                                          name=f"{self.name}_lookup")

    # --- the vocabulary -----------------------------------------------------------------------------------
    def get_vocabulary(self, include_special_tokens=True) -> list:
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self) -> int:
        return self._lookup_layer.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None) -> None:
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights)

    def adapt(self, data, batch_size=None, steps=None) -> None:
        """Build the vocabulary from strings (an array, a list, or a dataset of string batches)."""
        from collections import Counter

        counts, doc_counts, docs = Counter(), Counter(), 0
        tf_idf = self.output_mode == "tf_idf"
        for batch in iterate_adapt_data(data, self, steps):
            for row in self._token_rows(as_host_array(batch, self))[0]:
                counts.update(row)
                if tf_idf:
                    doc_counts.update(set(row))
                docs += 1
        counts.pop("", None)
        self._lookup_layer._adapt_counts(counts, doc_counts, docs)

    # --- strings to tokens --------------------------------------------------------------------------------
    def _standardized(self, arr: np.ndarray) -> np.ndarray:
        """The inputs as an array of str, standardized."""
        if arr.dtype.kind not in "USO":
            raise DataError(f"TextVectorization '{self.name}' takes strings; received an array of {arr.dtype}. "
                            f"Integer ids go straight to an Embedding layer.")
        enc = self.encoding
        flat = [_text(v, enc) for v in arr.reshape(-1).tolist()]
        mode = self.standardize
        if mode in ("lower", "lower_and_strip_punctuation"):
            flat = [s.translate(_ASCII_LOWER) for s in flat]
        if mode in ("strip_punctuation", "lower_and_strip_punctuation"):
            flat = [_PUNCTUATION.sub("", s) for s in flat]
        out = np.asarray(flat + [None], dtype=object)[:-1].reshape(arr.shape)
        if callable(mode):
            out = np.asarray(mode(out.astype(str) if out.size else out))
            if out.dtype.kind not in "USO":
                raise DataError(f"TextVectorization '{self.name}': the standardize callable returned an array of "
                                f"{out.dtype}; it must return strings.")
            out = np.asarray([_text(v, enc) for v in out.reshape(-1).tolist()] + [None],
                             dtype=object)[:-1].reshape(out.shape)
        return out

    def _token_rows(self, arr: np.ndarray):
        """(rows of tokens, the shape of a result without split: None when split)."""
        text = self._standardized(arr)
        if self.split is None:
            rows = [[t] for t in text.reshape(-1).tolist()]
            return [self._grams(r) for r in rows], text.shape
        if text.ndim > 1:
            if text.shape[-1] != 1:
                raise DataError(f"TextVectorization '{self.name}': to split strings the input must have rank 1 or "
                                f"a last dimension of 1; received shape {text.shape}. Pass a (batch,) or "
                                f"(batch, 1) array of strings.")
            text = text[..., 0]
        flat = text.reshape(-1).tolist()
        if self.split == "whitespace":
            rows = [[t for t in _WHITESPACE.split(s) if t] for s in flat]
        elif self.split == "character":
            rows = [list(s) for s in flat]
        else:
            rows = self._call_split(text)
        return [self._grams(r) for r in rows], None

    def _call_split(self, text: np.ndarray) -> list:
        out = self.split(text.astype(str) if text.size else text)
        rows = [out] if text.ndim == 0 else list(out)
        if len(rows) != max(1, text.size):
            raise DataError(f"TextVectorization '{self.name}': the split callable returned {len(rows)} rows for "
                            f"{text.size} strings; return one list of tokens per string.")
        return [[_text(t, self.encoding) for t in np.asarray(r, dtype=object).reshape(-1).tolist()] for r in rows]

    def _grams(self, tokens: list) -> list:
        if self._widths is None:
            return tokens
        out = []
        for w in self._widths:
            out += [" ".join(tokens[i:i + w]) for i in range(len(tokens) - w + 1)]
        return out

    # --- the call -----------------------------------------------------------------------------------------
    def host_call(self, inputs):
        arr = as_host_array(inputs, self)
        rows, kept_shape = self._token_rows(arr)
        lookup = self._lookup_layer
        lengths = [len(r) for r in rows]
        flat = np.asarray([t for r in rows for t in r] + [None], dtype=object)[:-1]
        ids = lookup._lookup(flat) if flat.size else np.zeros(0, np.int64)
        if kept_shape is not None and self.output_mode == "int" and self._widths in (None, (1,)):
            out = ids.reshape(kept_shape)
            return self._fit_length(out) if out.ndim else out
        if self.ragged and arr.ndim:
            return self._ragged_ids(ids, lengths)
        width = self.output_sequence_length or max(lengths, default=0)
        if self.ragged:  # one string: cut to output_sequence_length, not padded
            width = min(width, max(lengths, default=0))
        fill = 0 if self.output_mode == "int" else -1
        dense = np.full((len(rows), width if self.output_mode == "int" else max(lengths, default=0)), fill, np.int64)
        start = 0
        for i, n in enumerate(lengths):
            take = min(n, dense.shape[1])
            dense[i, :take] = ids[start:start + take]
            start += n
        if self.output_mode == "int":
            return dense[0] if arr.ndim == 0 else dense
        if kept_shape is not None and arr.ndim == 1:  # no split: a 1-D input is one document (Keras)
            return lookup._encode(dense.reshape(1, -1), rank_one_is_batch=True)[0]
        out = lookup._encode(dense, rank_one_is_batch=True)
        return out[0] if arr.ndim == 0 else out

    def _ragged_ids(self, ids: np.ndarray, lengths: list):
        """ragged=True: each string's ids as a row of a RaggedTensor, cut to output_sequence_length."""
        from flexflow_keras.tf_ragged import RaggedTensor

        ends = np.cumsum([0] + lengths)
        n = self.output_sequence_length
        return RaggedTensor([ids[a:b][:n] for a, b in zip(ends[:-1], ends[1:], strict=True)], "int64")

    def _fit_length(self, out: np.ndarray) -> np.ndarray:
        n = self.output_sequence_length
        if n is None:
            return out
        out = out[..., :n]
        if out.shape[-1] < n and not self.ragged:
            pad = [(0, 0)] * (out.ndim - 1) + [(0, n - out.shape[-1])]
            out = np.pad(out, pad)
        return out

    def output_dtype(self) -> str:
        return "float32" if self.output_mode == "tf_idf" else "int64"

    def compute_output_shape(self, input_shape):
        if self.ragged:
            raise ArgumentError(f"TextVectorization '{self.name}': ragged=True gives RaggedTensors, which "
                                f"flexflow_keras models do not take as inputs; in a model use ragged=False (ids "
                                f"padded with 0, output_sequence_length= for a fixed length), or call the layer on "
                                f"the strings outside the model.")
        shape = tuple(input_shape)
        batch = shape[:1] if len(shape) >= 1 else ()
        if self.output_mode == "int":
            if self.split is None and len(shape) >= 2 and shape[-1] == 1 and self.output_sequence_length is None:
                return shape
            return batch + (self.output_sequence_length,)
        width = self.max_tokens if self.pad_to_max_tokens else (
            self.vocabulary_size() if self._lookup_layer._vocab else None)
        return batch + (width,)

    def get_config(self) -> dict:
        config = super().get_config()
        lookup = self._lookup_layer
        config.update({"max_tokens": self.max_tokens, "standardize": self.standardize, "split": self.split,
                       "ngrams": self.ngrams, "output_mode": self.output_mode,
                       "output_sequence_length": self.output_sequence_length,
                       "pad_to_max_tokens": self.pad_to_max_tokens, "sparse": False, "ragged": self.ragged,
                       "vocabulary": list(lookup._vocab) if lookup._vocab else None,
                       "idf_weights": None if lookup._idf is None else
                       lookup._idf[len(lookup._reserved()):].tolist(),
                       "encoding": self.encoding, "vocabulary_size": self.vocabulary_size()})
        return config
