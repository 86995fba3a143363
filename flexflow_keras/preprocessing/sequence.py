"""`keras.preprocessing.sequence` (Keras 2, still in tf.keras): `pad_sequences` (the one in `keras.utils`),
`TimeseriesGenerator`, and word2vec's `skipgrams` / `make_sampling_table`.

`skipgrams` draws from Python's `random` module in the order Keras' does (the sampling test per word, the
shuffled negative words, one `randint` per negative, then the seeded shuffles), so the same seed gives
the same pairs as tf.keras.
"""

from __future__ import annotations

import random

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.utils.py_dataset import PyDataset
from flexflow_keras.utils.sequence import pad_sequences

_EULER_GAMMA = 0.577  # the value Keras' approximation uses


def make_sampling_table(size, sampling_factor=1e-5) -> np.ndarray:
    """word2vec's sampling probability of the word of each frequency rank (0..size-1), frequencies from
    Zipf's law: ``min(1, f / sqrt(f))`` with ``f = sampling_factor * rank * (log(rank) + gamma) + ...``."""
    rank = np.arange(int(size))
    rank[0] = 1
    inverse_frequency = rank * (np.log(rank) + _EULER_GAMMA) + 0.5 - 1.0 / (12.0 * rank)
    f = sampling_factor * inverse_frequency
    return np.minimum(1.0, f / np.sqrt(f))


def skipgrams(sequence, vocabulary_size, window_size=4, negative_samples=1.0, shuffle=True, categorical=False,
              sampling_table=None, seed=None):
    """(pairs, labels): every (word, neighbour within `window_size`) pair labelled 1, and
    `negative_samples` times as many (word, random word) pairs labelled 0 (index 0 is no word).

    Args:
        sequence: word ids of a sentence.
        vocabulary_size: the largest id + 1 (negatives are drawn from 1..vocabulary_size-1).
        window_size: neighbours on each side.
        negative_samples: negatives per positive (0: none).
        shuffle: shuffle pairs and labels together (with `seed`).
        categorical: labels as [0, 1] / [1, 0] instead of 1 / 0.
        sampling_table: per id, the probability of keeping that word as a centre (make_sampling_table).
    """
    pairs, labels = [], []
    positive, negative = ([0, 1], [1, 0]) if categorical else (1, 0)
    n = len(sequence)
    for i, centre in enumerate(sequence):
        if not centre:
            continue
        if sampling_table is not None and sampling_table[centre] < random.random():
            continue
        for j in range(max(0, i - window_size), min(n, i + window_size + 1)):
            if j != i and sequence[j]:
                pairs.append([centre, sequence[j]])
                labels.append(positive)
    if negative_samples > 0:
        count = int(len(labels) * negative_samples)
        centres = [p[0] for p in pairs]
        random.shuffle(centres)
        pairs += [[centres[k % len(centres)], random.randint(1, vocabulary_size - 1)] for k in range(count)]
        labels += [negative] * count
    if shuffle:
        if seed is None:
            seed = random.randint(0, 10e6)
        for seq in (pairs, labels):  # the same permutation for both
            random.seed(seed)
            random.shuffle(seq)
    return pairs, labels


class TimeseriesGenerator(PyDataset):
    """Batches of windows of a time series and the target after each (Keras 2's generator).

    Sample k ends just before row ``start_index + length + k * stride``: ``data[row - length:row:
    sampling_rate]``, with target ``targets[row]``.

    Args:
        data, targets: arrays of the same length (time first).
        length: steps of history per sample.
        sampling_rate: take every this-many steps of the history.
        stride: steps between consecutive samples.
        start_index, end_index: the rows used (end_index: the last row, len(data) - 1 by default).
        shuffle: draw the rows of each batch at random instead of in order.
        reverse: windows in reverse time order.
        batch_size: samples per batch.
    """

    def __init__(self, data, targets, length, sampling_rate=1, stride=1, start_index=0, end_index=None,
                 shuffle=False, reverse=False, batch_size=128, **kwargs):
        super().__init__(**kwargs)
        if len(data) != len(targets):
            raise ArgumentError(f"TimeseriesGenerator: data and targets must have the same length; data has "
                                f"{len(data)} rows and targets {len(targets)}.")
        self.data, self.targets = data, targets
        self.length, self.sampling_rate, self.stride = int(length), int(sampling_rate), int(stride)
        self.start_index = int(start_index) + self.length
        self.end_index = len(data) - 1 if end_index is None else int(end_index)
        self.shuffle, self.reverse, self.batch_size = bool(shuffle), bool(reverse), int(batch_size)
        if self.start_index > self.end_index:
            raise ArgumentError(f"TimeseriesGenerator: start_index + length = {self.start_index} is past end_index "
                                f"= {self.end_index}, so no row is left to predict; shorten length or give more data.")

    def __len__(self) -> int:
        span = self.batch_size * self.stride
        return (self.end_index - self.start_index + span) // span

    def __getitem__(self, index):
        if self.shuffle:
            rows = np.random.randint(self.start_index, self.end_index + 1, size=self.batch_size)
        else:
            first = self.start_index + self.batch_size * self.stride * index
            rows = np.arange(first, min(first + self.batch_size * self.stride, self.end_index + 1), self.stride)
        samples = np.array([self.data[r - self.length:r:self.sampling_rate] for r in rows])
        targets = np.array([self.targets[r] for r in rows])
        return (samples[:, ::-1, ...] if self.reverse else samples), targets


__all__ = ["pad_sequences", "TimeseriesGenerator", "make_sampling_table", "skipgrams"]
