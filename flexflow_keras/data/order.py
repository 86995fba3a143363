"""The sample order of an epoch, one function for every data path (arrays, `-d` datasets, image
folders): a function of (seed, epoch) only, so a seeded run visits the samples in the same order every
time, whatever reads them."""

from __future__ import annotations

import numpy as np


def epoch_order(n: int, seed: int, epoch: int, shuffle=True, batch_size: int | None = None) -> np.ndarray:
    """The int64 sample order of `epoch`.

    Args:
        n: number of samples.
        seed: the run's shuffling seed.
        epoch: the epoch index.
        shuffle: True (a permutation per epoch), "batch" (batch-sized chunks in shuffled order) or False.
        batch_size: the chunk size for shuffle="batch".
    """
    idx = np.arange(n, dtype=np.int64)
    if not shuffle:
        return idx
    rng = np.random.default_rng([int(seed), int(epoch)])
    if shuffle == "batch":
        size = int(batch_size or n or 1)
        chunks = [idx[i:i + size] for i in range(0, n, size)]
        return np.concatenate([chunks[i] for i in rng.permutation(len(chunks))]) if chunks else idx
    return rng.permutation(n).astype(np.int64)
