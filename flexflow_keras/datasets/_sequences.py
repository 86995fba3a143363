"""Word-index sequence datasets (imdb, reuters): Keras' post-processing (shuffle, start/OOV characters,
index offset, maxlen filter, vocabulary cut) on flat arrays, and learnable synthetic corpora.

A corpus is (flat int64 token array, per-sequence lengths, labels); Keras' list-of-lists result is made
only at the end.
"""

from __future__ import annotations

import numpy as np


def flatten(seqs) -> tuple[np.ndarray, np.ndarray]:
    """(flat tokens, lengths) of a sequence of int sequences."""
    lengths = np.fromiter((len(s) for s in seqs), np.int64, count=len(seqs))
    flat = np.concatenate([np.asarray(s, np.int64) for s in seqs]) if len(seqs) else np.zeros(0, np.int64)
    return flat, lengths


def _starts(lengths: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if len(lengths) else lengths


def _take(flat, lengths, order):
    """The sequences `order` (indices) of a corpus, concatenated."""
    new_len = lengths[order]
    idx = (np.arange(int(new_len.sum()), dtype=np.int64) - np.repeat(_starts(new_len), new_len)
           + np.repeat(_starts(lengths)[order], new_len))
    return flat[idx], new_len


def shuffle(rng: np.random.RandomState, flat, lengths, labels):
    """Permute sequences with Keras' generator (``RandomState(seed)`` and ``rng.shuffle(indices)``)."""
    indices = np.arange(len(lengths))
    rng.shuffle(indices)
    flat, lengths = _take(flat, lengths, indices)
    return flat, lengths, labels[indices]


def add_start_and_offset(flat, lengths, start_char, index_from):
    """Prepend `start_char` to every sequence and add `index_from` to every word, as Keras."""
    if start_char is None:
        return (flat + index_from if index_from else flat), lengths
    shifted = flat + index_from if index_from else flat
    out = np.insert(shifted, _starts(lengths), start_char) if len(lengths) else shifted
    return out, lengths + 1


def remove_long(maxlen, flat, lengths, labels):
    """Keep sequences shorter than `maxlen` (Keras' remove_long_seq keeps ``len < maxlen``)."""
    keep = np.nonzero(lengths < maxlen)[0]
    flat, new_len = _take(flat, lengths, keep)
    return flat, new_len, labels[keep]


def limit_vocabulary(flat, num_words, skip_top, oov_char):
    """Words outside [skip_top, num_words) become `oov_char` (or are dropped when it is None)."""
    ok = (flat >= skip_top) & (flat < num_words)
    if oov_char is not None:
        return np.where(ok, flat, oov_char), None
    return flat[ok], ok


def to_object_array(flat, lengths) -> np.ndarray:
    """Keras' result: an object array of Python lists of ints."""
    tokens = flat.tolist()
    bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    out = np.empty(len(lengths), dtype=object)
    for i in range(len(lengths)):
        out[i] = tokens[bounds[i]:bounds[i + 1]]
    return out


def _segment_lengths(ok: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    if not len(lengths):
        return lengths
    counts = np.add.reduceat(ok.astype(np.int64), _starts(lengths)) if len(ok) else np.zeros_like(lengths)
    return np.where(lengths > 0, counts, 0)


def finish(parts, num_words, skip_top, oov_char):
    """Apply the vocabulary cut to [(flat, lengths, labels), ...] together (Keras computes the default
    num_words over train and test) and build the object arrays."""
    if not num_words:
        num_words = int(max(int(f.max()) for f, _, _ in parts if len(f)))
    out = []
    for flat, lengths, labels in parts:
        flat, ok = limit_vocabulary(flat, num_words, skip_top, oov_char)
        if ok is not None:
            lengths = _segment_lengths(ok, lengths)
        out.append((to_object_array(flat, lengths), labels))
    return out


def synthetic_corpus(seed: int, n: int, classes: int, vocab: int, mean_len: float, class_probs=None):
    """A learnable corpus: Zipf-like background words plus class-specific indicator words.

    Args:
        seed: generator seed.
        n: number of sequences.
        classes: number of labels.
        vocab: largest word rank (raw indices 1..vocab, before Keras' index offset).
        mean_len: mean sequence length.
        class_probs: label distribution (default uniform).

    Returns:
        (flat tokens int64, lengths int64, labels int64).
    """
    rng = np.random.default_rng(seed)
    labels = rng.choice(classes, size=n, p=class_probs).astype(np.int64)
    lengths = np.clip(rng.lognormal(np.log(mean_len) - 0.3, 0.75, n), 8, 20 * mean_len).astype(np.int64)
    total = int(lengths.sum())
    # Background: power-law ranks (frequent words are small numbers, as in Keras' word ranks), by
    # inverting P(rank > r) = r**-0.3 (median rank about 10), much faster than rng.zipf.
    u = rng.random(total, dtype=np.float32)
    with np.errstate(over="ignore", divide="ignore"):
        background = np.minimum(np.floor(u ** np.float32(-1 / 0.3)), vocab).astype(np.int64)
    # 15% of words are indicators: 40 words per class among ranks 20..2000 (kept by num_words=5000+).
    indicators = 20 + rng.permutation(1980)[: classes * 40].reshape(classes, 40)
    owner = np.repeat(labels, lengths)
    use = rng.random(total) < 0.15
    picks = indicators[owner[use], rng.integers(0, 40, int(use.sum()))]
    background[use] = picks
    return background, lengths, labels
