"""`keras.preprocessing.text` (Keras 2): `Tokenizer`, `text_to_word_sequence`, `one_hot`, `hashing_trick`
and `tokenizer_from_json`, with Keras 2's semantics (word ranks by frequency, ties in first-seen order;
index 0 is never a word; `num_words` keeps ranks below it; `oov_token` takes index 1)."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict, defaultdict

import numpy as np

DEFAULT_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'
_MODES = ("binary", "count", "tfidf", "freq")


def text_to_word_sequence(text: str, filters: str = DEFAULT_FILTERS, lower: bool = True,
                          split: str = " ") -> list[str]:
    """The words of `text`: lower-cased (when `lower`), each `filters` character made a separator.

    Args:
        text: the string to split.
        filters: characters removed (treated as `split`).
        lower: lower-case first.
        split: the word separator.

    Returns:
        the non-empty words, in order.
    """
    if not isinstance(text, str):
        raise TypeError(f"text_to_word_sequence expects a string, received {type(text).__name__}: {text!r}.")
    if lower:
        text = text.lower()
    text = text.translate(str.maketrans({c: split for c in filters}))
    return [w for w in text.split(split) if w]


def hashing_trick(text: str, n: int, hash_function=None, filters: str = DEFAULT_FILTERS, lower: bool = True,
                  split: str = " ") -> list[int]:
    """Each word of `text` hashed to an index in ``[1, n-1]`` (0 is kept for padding).

    Args:
        text: the string.
        n: size of the hashing space.
        hash_function: None (Python's `hash`, which varies between runs unless PYTHONHASHSEED is set),
            ``"md5"`` (stable), or a callable from a string to an int.
        filters, lower, split: as `text_to_word_sequence`.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"hashing_trick expects an integer n >= 2 (indices are 1..n-1), received n={n!r}.")
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":
        def hash_function(w):
            return int(hashlib.md5(w.encode()).hexdigest(), 16)
    elif not callable(hash_function):
        raise ValueError(f"hashing_trick expects hash_function None, 'md5' or a callable, received "
                         f"{hash_function!r}.")
    words = text_to_word_sequence(text, filters=filters, lower=lower, split=split)
    return [int(hash_function(w) % (n - 1) + 1) for w in words]


def one_hot(text: str, n: int, filters: str = DEFAULT_FILTERS, lower: bool = True, split: str = " ",
            analyzer=None) -> list[int]:
    """Keras 2's `one_hot`: `hashing_trick` with Python's `hash` (indices in ``[1, n-1]``).

    Args:
        text, n, filters, lower, split: as `hashing_trick`.
        analyzer: a callable from the text to its words, used instead of `text_to_word_sequence`.
    """
    if analyzer is None:
        return hashing_trick(text, n, hash_function=hash, filters=filters, lower=lower, split=split)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"one_hot expects an integer n >= 2, received n={n!r}.")
    return [hash(w) % (n - 1) + 1 for w in analyzer(text)]


class Tokenizer:
    """Text to word-index sequences or to bag-of-words matrices (Keras 2's `Tokenizer`).

    Args:
        num_words: keep only words of rank below `num_words` when converting (None: all). Fitting always
            counts every word.
        filters: characters removed from texts.
        lower: lower-case texts.
        split: word separator.
        char_level: every character is a token.
        oov_token: if given, it gets index 1 and replaces out-of-vocabulary words in `texts_to_sequences`.
        analyzer: a callable from a text to its tokens, replacing `text_to_word_sequence`.
        document_count: initial document count (as Keras 2; used by tf-idf).

    Example:
        >>> tok = Tokenizer(num_words=100)
        >>> tok.fit_on_texts(["the cat", "the dog"])
        >>> tok.texts_to_sequences(["the cat sat"])
        [[1, 2]]
    """

    def __init__(self, num_words=None, filters=DEFAULT_FILTERS, lower=True, split=" ", char_level=False,
                 oov_token=None, analyzer=None, document_count=0, **kwargs):
        if "nb_words" in kwargs:  # Keras 1 spelling that Keras 2 still accepted
            num_words = kwargs.pop("nb_words")
        if kwargs:
            raise TypeError(f"Tokenizer got unexpected keyword arguments {sorted(kwargs)}. Valid: num_words, "
                            "filters, lower, split, char_level, oov_token, analyzer, document_count.")
        if num_words is not None and (isinstance(num_words, bool) or not isinstance(num_words, (int, np.integer))
                                      or num_words < 1):
            raise ValueError(f"Tokenizer expects num_words to be a positive integer or None, received "
                             f"num_words={num_words!r}.")
        self.word_counts: OrderedDict[str, int] = OrderedDict()
        self.word_docs: defaultdict[str, int] = defaultdict(int)
        self.filters = filters
        self.split = split
        self.lower = lower
        self.num_words = num_words
        self.document_count = document_count
        self.char_level = char_level
        self.oov_token = oov_token
        self.index_docs: defaultdict[int, int] = defaultdict(int)
        self.word_index: dict[str, int] = {}
        self.index_word: dict[int, str] = {}
        self.analyzer = analyzer

    def _tokens(self, text) -> list:
        if self.char_level or isinstance(text, list):
            if self.lower:
                if isinstance(text, list):
                    return [t.lower() for t in text]
                return list(text.lower())
            return list(text)
        if self.analyzer is not None:
            return list(self.analyzer(text))
        return text_to_word_sequence(text, self.filters, self.lower, self.split)

    def fit_on_texts(self, texts) -> None:
        """Count words (and the documents each appears in) and rebuild `word_index`.

        Args:
            texts: strings, or lists of tokens.
        """
        if isinstance(texts, str):
            raise TypeError("Tokenizer.fit_on_texts expects a list of texts, received one string; wrap it "
                            "in a list: fit_on_texts([text]).")
        for text in texts:
            self.document_count += 1
            seq = self._tokens(text)
            for w in seq:
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
            for w in set(seq):
                self.word_docs[w] += 1
        # Rank by count; equal counts keep first-seen order (a stable sort of the insertion order).
        ranked = sorted(self.word_counts.items(), key=lambda kv: kv[1], reverse=True)
        vocab = ([] if self.oov_token is None else [self.oov_token]) + [w for w, _ in ranked]
        self.word_index = {w: i for i, w in enumerate(vocab, start=1)}
        self.index_word = {i: w for w, i in self.word_index.items()}
        self.index_docs = defaultdict(int, {self.word_index[w]: c for w, c in self.word_docs.items()})

    def fit_on_sequences(self, sequences) -> None:
        """Count, per index, the sequences it appears in (what `sequences_to_matrix(mode='tfidf')` needs).

        Args:
            sequences: lists of word indices.
        """
        self.document_count += len(sequences)
        for seq in sequences:
            for i in set(seq):
                self.index_docs[int(i)] += 1

    def texts_to_sequences(self, texts) -> list[list[int]]:
        """Each text as the list of its words' indices (see `texts_to_sequences_generator`)."""
        return list(self.texts_to_sequences_generator(texts))

    def texts_to_sequences_generator(self, texts):
        """Yield each text's word indices: unknown words, and words of rank >= `num_words`, are dropped, or
        become the `oov_token`'s index when there is one."""
        oov_index = self.word_index.get(self.oov_token) if self.oov_token is not None else None
        for text in texts:
            out = []
            for w in self._tokens(text):
                i = self.word_index.get(w)
                if i is not None:
                    if self.num_words and i >= self.num_words:
                        if oov_index is not None:
                            out.append(oov_index)
                    else:
                        out.append(i)
                elif oov_index is not None:
                    out.append(oov_index)
            yield out

    def sequences_to_texts(self, sequences) -> list[str]:
        """Word-index sequences back to space-joined texts (same filtering as `texts_to_sequences`)."""
        return list(self.sequences_to_texts_generator(sequences))

    def sequences_to_texts_generator(self, sequences):
        """Yield each sequence as a text (indices of rank >= `num_words` and unknown ones become the
        `oov_token`, or are dropped without one)."""
        oov_index = self.word_index.get(self.oov_token) if self.oov_token is not None else None
        for seq in sequences:
            words = []
            for i in seq:
                i = int(i)
                w = self.index_word.get(i)
                if w is not None and not (self.num_words and i >= self.num_words):
                    words.append(w)
                elif oov_index is not None:
                    words.append(self.index_word[oov_index])
            yield " ".join(words)

    def texts_to_matrix(self, texts, mode: str = "binary") -> np.ndarray:
        """`sequences_to_matrix(texts_to_sequences(texts), mode)`."""
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences, mode: str = "binary") -> np.ndarray:
        """A (len(sequences), num_words) float64 matrix; column j describes word index j.

        Args:
            sequences: lists of word indices (indices >= the width are ignored).
            mode: ``"binary"`` (1 where present), ``"count"``, ``"freq"`` (count / sequence length) or
                ``"tfidf"`` (``(1 + log count) * log(1 + documents / (1 + documents containing j))``).
        """
        if mode not in _MODES:
            raise ValueError(f"Tokenizer.sequences_to_matrix expects mode in {_MODES}, received mode={mode!r}.")
        width = self.num_words
        if not width:
            if not self.word_index:
                raise ValueError("Tokenizer.sequences_to_matrix needs num_words, or a tokenizer fitted on texts "
                                 "(fit_on_texts) to size the matrix. Pass Tokenizer(num_words=...).")
            width = len(self.word_index) + 1
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Tokenizer.sequences_to_matrix(mode='tfidf') needs document counts: call "
                             "fit_on_texts or fit_on_sequences first.")
        x = np.zeros((len(sequences), width))
        for row, seq in enumerate(sequences):
            if len(seq) == 0:
                continue
            counts: dict[int, int] = defaultdict(int)
            for j in seq:
                j = int(j)
                if j < width:
                    counts[j] += 1
            for j, c in counts.items():
                if mode == "count":
                    x[row, j] = c
                elif mode == "freq":
                    x[row, j] = c / len(seq)
                elif mode == "binary":
                    x[row, j] = 1
                else:
                    tf = 1 + np.log(c)
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(j, 0)))
                    x[row, j] = tf * idf
        return x

    def get_config(self) -> dict:
        """The tokenizer's settings and fitted state (JSON-encoded dicts, as Keras 2)."""
        return {"num_words": self.num_words, "filters": self.filters, "lower": self.lower, "split": self.split,
                "char_level": self.char_level, "oov_token": self.oov_token,
                "document_count": self.document_count, "word_counts": json.dumps(self.word_counts),
                "word_docs": json.dumps(self.word_docs), "index_docs": json.dumps(self.index_docs),
                "index_word": json.dumps(self.index_word), "word_index": json.dumps(self.word_index)}

    def to_json(self, **kwargs) -> str:
        """The tokenizer as a JSON string (`tokenizer_from_json` reads it); kwargs go to `json.dumps`."""
        return json.dumps({"class_name": "Tokenizer", "config": self.get_config()}, **kwargs)


def tokenizer_from_json(json_string: str) -> Tokenizer:
    """A `Tokenizer` from `Tokenizer.to_json()`'s string."""
    config = dict(json.loads(json_string).get("config", {}))
    state = {k: json.loads(config.pop(k)) for k in ("word_counts", "word_docs", "index_docs", "index_word",
                                                   "word_index")}
    tok = Tokenizer(**config)
    tok.word_counts = OrderedDict(state["word_counts"])
    tok.word_docs = defaultdict(int, state["word_docs"])
    tok.index_docs = defaultdict(int, {int(k): v for k, v in state["index_docs"].items()})
    tok.index_word = {int(k): v for k, v in state["index_word"].items()}
    tok.word_index = dict(state["word_index"])
    return tok


__all__ = ["Tokenizer", "hashing_trick", "one_hot", "text_to_word_sequence", "tokenizer_from_json"]
