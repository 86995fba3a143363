"""`keras.datasets.imdb`: movie reviews as word-index sequences, sentiment labels 0/1, 25000 + 25000.

Reads Keras' ``imdb.npz`` (object arrays of word ranks, read with a restricted unpickler) from -d (which,
when given, must hold it) or the Keras cache; without it, a deterministic learnable synthetic corpus with the real sample counts and a
similar vocabulary and length distribution. Both go through Keras' processing (seeded shuffle,
start/OOV characters, index_from, maxlen, num_words, skip_top).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.datasets import _common as C
from flexflow_keras.datasets import _flag
from flexflow_keras.datasets import _sequences as S

TRAIN = TEST = 25000
VOCAB = 88586


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1, oov_char=2,
              index_from=3, **kwargs):
    """Loads the IMDB dataset (Keras' signature).

    Args:
        path: file name looked up in -d and the Keras cache.
        num_words: keep the most frequent words (ranks below num_words); others become oov_char.
        skip_top: treat the most frequent skip_top words as OOV.
        maxlen: drop sequences of length >= maxlen.
        seed: shuffling seed.
        start_char: index marking a sequence start (None: none).
        oov_char: index of out-of-vocabulary words (None: drop them).
        index_from: offset added to word ranks.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: object arrays of lists of ints; int64 labels.
    """
    if kwargs:
        raise TypeError(f"imdb.load_data() got unexpected keyword arguments {sorted(kwargs)}.")
    found, why = C.locate("imdb", [path, "imdb.npz"])
    if found is not None and found.from_flag:
        _flag.sequence_file("imdb", found, C.TRAIN_TEST_KEYS, "x_train/y_train/x_test/y_test word-index sequences")
    if found is not None:
        try:
            f = C.load_npz(found.path)
            tr, te = S.flatten(f["x_train"]), S.flatten(f["x_test"])
            labels_train, labels_test = np.asarray(f["y_train"]), np.asarray(f["y_test"])
        except (OSError, ValueError, KeyError, EOFError) as e:
            raise C.read_error("imdb", found.path, e) from None
    else:
        flat, lengths, labels = S.synthetic_corpus(5, TRAIN + TEST, 2, VOCAB, 234.0)
        split = int(lengths[:TRAIN].sum())
        tr, te = (flat[:split], lengths[:TRAIN]), (flat[split:], lengths[TRAIN:])
        labels_train, labels_test = labels[:TRAIN], labels[TRAIN:]
    rng = np.random.RandomState(seed)
    parts = []
    for (flat, lengths), labels in ((tr, labels_train), (te, labels_test)):
        flat, lengths, labels = S.shuffle(rng, flat, lengths, labels)
        flat, lengths = S.add_start_and_offset(flat, lengths, start_char, index_from)
        if maxlen:
            flat, lengths, labels = S.remove_long(maxlen, flat, lengths, labels)
        parts.append((flat, lengths, labels))
    if maxlen and (not len(parts[0][1]) or not len(parts[1][1])):
        raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no sequence was kept. "
                         f"Increase maxlen.")
    (x_train, y_train), (x_test, y_test) = S.finish(parts, num_words, skip_top, oov_char)
    detail = f"{len(x_train)} train + {len(x_test)} test reviews, labels 0/1"
    if found is not None:
        C.log_real("imdb", found, detail)
    else:
        C.log_synthetic("imdb", why, detail + ", learnable indicator words")
        C.mark_synthetic("imdb", (x_train, y_train), (x_test, y_test), any_width=True)
    return (x_train, y_train), (x_test, y_test)


def get_word_index(path="imdb_word_index.json"):
    """The word -> rank dictionary from Keras' imdb_word_index.json (-d directory or Keras cache).

    Raises:
        DataError: when the file is not there (it is never downloaded).
    """
    return _word_index("imdb", path)


def _word_index(dataset: str, path: str) -> dict:
    import json
    import os

    flag = C.flag_path(dataset)
    found, why = C.locate_cached([path], flag if flag and os.path.isdir(flag) else None)
    if found is None:
        raise C.DataError(f"{dataset}.get_word_index(): {path} not found ({why}); nothing is downloaded. Copy "
                          f"Keras' {path} into ~/.keras/datasets/.")
    try:
        with open(found.path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise C.read_error(dataset, found.path, e) from None
