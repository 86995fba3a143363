"""fit's "data:" log line says what a pass of a dataset holds as far as it is known before reading it:
its batches' count and the first one's size, not a sample count rounded up to full batches."""

import logging

import numpy as np

import flexflow_keras as keras
from flexflow_keras.data.slices import SliceDataset


def _fit(data, caplog, **kw):
    m = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(2, activation="softmax")])
    m.compile("sgd", "sparse_categorical_crossentropy")
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        m.fit(data, epochs=1, verbose=0, **kw)
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("data:")]


def test_a_dataset_of_1000_samples_in_batches_of_64_is_16_batches_not_1024_samples(caplog):
    rng = np.random.default_rng(0)
    x, y = rng.random((1000, 4), dtype=np.float32), rng.integers(0, 2, 1000)
    (line,) = _fit(SliceDataset.from_tensor_slices((x, y)).batch(64), caplog)
    assert line == "data: tf.data Dataset, 16 batches a pass, the first of 64 samples", line


def test_a_generator_says_its_length_is_unknown(caplog):
    rng = np.random.default_rng(0)

    def gen():
        for _ in range(3):
            yield rng.random((8, 4), dtype=np.float32), rng.integers(0, 2, 8)

    (line,) = _fit(gen(), caplog, steps_per_epoch=3)
    assert "batches of 8, their number unknown" in line, line
