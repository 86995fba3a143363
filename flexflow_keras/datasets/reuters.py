"""`keras.datasets.reuters`: newswires as word-index sequences in 46 topics, 11228 samples split by
`test_split` (8982 + 2246 by default).

Reads Keras' ``reuters.npz`` (object arrays x, y) from -d (which, when given, must hold it) or the Keras
cache; without it, a deterministic
learnable synthetic corpus with the real sample count, a skewed topic distribution and a similar
vocabulary. Both go through Keras' processing.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.datasets import _common as C
from flexflow_keras.datasets import _flag
from flexflow_keras.datasets import _sequences as S
from flexflow_keras.datasets.imdb import _word_index

SAMPLES, CLASSES, VOCAB = 11228, 46, 30979

_LABELS = ("cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing", "money-supply", "coffee",
           "sugar", "trade", "reserves", "ship", "cotton", "carcass", "crude", "nat-gas", "cpi", "money-fx",
           "interest", "gnp", "meal-feed", "alum", "oilseed", "gold", "tin", "strategic-metal", "livestock",
           "retail", "ipi", "iron-steel", "rubber", "heat", "jobs", "lei", "bop", "zinc", "orange", "pet-chem",
           "dlr", "gas", "silver", "wpi", "hog", "lead")


def _topic_probs() -> np.ndarray:
    # Reuters is dominated by 'earn' (3) and 'acq' (4); the rest follow a long tail.
    ranked = [3, 4] + [c for c in range(CLASSES) if c not in (3, 4)]
    w = np.empty(CLASSES)
    w[ranked] = 1.0 / (1.0 + np.arange(CLASSES)) ** 1.2
    return w / w.sum()


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2, seed=113,
              start_char=1, oov_char=2, index_from=3):
    """Loads the Reuters newswire dataset (Keras' signature).

    Args:
        path: file name looked up in -d and the Keras cache.
        num_words, skip_top, maxlen, seed, start_char, oov_char, index_from: as `imdb.load_data`.
        test_split: fraction of the (shuffled) samples used for testing.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: object arrays of lists of ints; int64 labels 0..45.
    """
    found, why = C.locate("reuters", [path, "reuters.npz"])
    if found is not None and found.from_flag:
        _flag.sequence_file("reuters", found, ("x", "y"), "x/y: word-index sequences and topic labels")
    if found is not None:
        try:
            f = C.load_npz(found.path)
            flat, lengths = S.flatten(f["x"])
            labels = np.asarray(f["y"]).astype(np.int64)
        except (OSError, ValueError, KeyError, EOFError) as e:
            raise C.read_error("reuters", found.path, e) from None
    else:
        flat, lengths, labels = S.synthetic_corpus(6, SAMPLES, CLASSES, VOCAB, 145.0, _topic_probs())
    rng = np.random.RandomState(seed)
    flat, lengths, labels = S.shuffle(rng, flat, lengths, labels)
    flat, lengths = S.add_start_and_offset(flat, lengths, start_char, index_from)
    if maxlen:
        flat, lengths, labels = S.remove_long(maxlen, flat, lengths, labels)
    idx = int(len(lengths) * (1 - test_split))
    cut = int(lengths[:idx].sum())
    parts = [(flat[:cut], lengths[:idx], labels[:idx]), (flat[cut:], lengths[idx:], labels[idx:])]
    (x_train, y_train), (x_test, y_test) = S.finish(parts, num_words, skip_top, oov_char)
    detail = f"{len(x_train)} train + {len(x_test)} test newswires, {CLASSES} topics"
    if found is not None:
        C.log_real("reuters", found, detail)
    else:
        C.log_synthetic("reuters", why, detail + ", learnable indicator words")
        C.mark_synthetic("reuters", (x_train, y_train), (x_test, y_test), any_width=True)
    return (x_train, y_train), (x_test, y_test)


def get_word_index(path="reuters_word_index.json"):
    """The word -> rank dictionary from Keras' reuters_word_index.json (never downloaded)."""
    return _word_index("reuters", path)


def get_label_names():
    """The 46 topic names, in label order."""
    return _LABELS
