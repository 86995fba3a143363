"""A Python generator given to `fit` as `validation_data`, read as Keras 3 reads it.

A generator can be read once. Keras 3 (3.15, through TensorFlow) peeks at its first two batches to learn the
data's shapes and keeps them; each validation then reads those two batches followed by whatever the generator
still has. So the first epoch validates on every batch, and once the generator is used up each later epoch
validates on its first two batches only (Keras warns in the first epoch that the input ran out of data). With
`validation_steps` Keras reads one iterator across epochs, which reading the generator itself already does,
so it is left as it is.
"""

from __future__ import annotations

import itertools
import logging

log = logging.getLogger("flexflow_keras")

KEPT_BATCHES = 2  # Keras' NUM_BATCHES_FOR_TENSOR_SPEC: the batches it peeks at and keeps


class KeptFirstBatches:
    """Iterating gives the kept first batches, then the rest of `generator` (all of it the first time)."""

    def __init__(self, generator):
        self._generator = generator
        self._kept = list(itertools.islice(generator, KEPT_BATCHES))
        self._passes = 0

    def __iter__(self):
        self._passes += 1
        yield from self._kept
        more = False  # whether the generator still had batches after the kept ones
        for item in self._generator:
            more = True
            yield item
        if self._passes == 2 and not more:
            log.warning("fit(validation_data=...) received a Python generator, and the first epoch's validation "
                        "read all of it: as in Keras 3, each later epoch validates on its first %d batches only "
                        "(those kept to learn the data's shapes). Pass a tf.data dataset, a PyDataset or arrays "
                        "to validate on all the data each epoch, or a generator that does not end together with "
                        "validation_steps.", len(self._kept))


def keep_first_batches(validation_data, validation_steps):
    """`validation_data` as fit reads it: a generator without `validation_steps` keeps its first batches for
    later epochs (see the module docstring); anything else is returned as it is."""
    if validation_steps is not None or not hasattr(validation_data, "__next__"):
        return validation_data
    from flexflow_keras.utils.py_dataset import PyDataset

    if isinstance(validation_data, PyDataset):
        return validation_data
    return KeptFirstBatches(validation_data)
