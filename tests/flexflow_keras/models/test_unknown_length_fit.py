"""fit / evaluate / predict on data of unknown length, as Keras 3's epoch iterator (checked against Keras 3.15
through TensorFlow 2.21): without steps_per_epoch an epoch runs until the data ends and the first epoch's
bar has no total (``k/Unknown``), later epochs count to the first one's steps; with steps_per_epoch the pass
continues across epochs; an endless source without it runs until a callback stops it; a Python generator
is read once. Sources here stand in for tf.data datasets of unknown cardinality (``len`` raises TypeError,
``cardinality()`` is -2) and for Python generators; the numbers must equal the same data given as arrays."""

import io
import itertools
import logging

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.callbacks.progress import ProgbarLogger, ProgressWriter
from flexflow_keras.models.training_feeds import known_length

N, BATCH = 20, 8  # 3 batches a pass, the last one of 4 samples


class Unsized:
    """A re-iterable of (x, y) batches whose length is unknown, as tf.data's after `filter` or
    `from_generator`: `len` is a TypeError and `cardinality()` is -2."""

    def __init__(self, batches, endless=False):
        self.batches, self.endless = batches, endless

    def __iter__(self):
        return itertools.cycle(self.batches) if self.endless else iter(self.batches)

    def __len__(self):
        raise TypeError("The dataset length is unknown.")

    def cardinality(self):
        return np.int64(-1 if self.endless else -2)


class TTY(io.StringIO):
    def isatty(self):
        return True


class Steps(keras.callbacks.Callback):
    """The batch indices of each epoch and the params fit gave the callbacks."""

    def __init__(self, stop_after=None):
        super().__init__()
        self.epochs, self.stop_after, self.total = [], stop_after, 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs.append([])

    def on_train_batch_end(self, batch, logs=None):
        self.epochs[-1].append(batch)
        self.total += 1
        if self.stop_after and self.total >= self.stop_after:
            self.model.stop_training = True


@pytest.fixture(autouse=True, scope="module")
def _one_processor():
    keras.config.set(data_parallel_degree=1)  # no strategy search for these tiny models
    yield
    keras.config.reset()


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, 6)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 1).astype(np.int32)


def _batches(x, y, size=BATCH):
    return [(x[i:i + size], y[i:i + size]) for i in range(0, len(x), size)]


def _model():
    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input((6,)), keras.layers.Dense(3, activation="softmax")])
    m.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def _tagged():
    """A model whose loss reads the batch it trained on: zero weights, no learning, mse of labels == id."""
    m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")])
    m.compile(keras.optimizers.SGD(0.0), "mse")
    return m


def _tag(i):
    return np.zeros((2, 2), np.float32), np.full((2, 1), float(i), np.float32)


def test_known_length_is_none_for_unknown_and_endless_sources(data):
    x, y = data
    assert known_length(Unsized(_batches(x, y))) is None
    assert known_length(Unsized(_batches(x, y), endless=True)) is None
    assert known_length(b for b in _batches(x, y)) is None
    assert known_length(_batches(x, y)) == 3


@pytest.mark.parametrize("degree", [1, 2])  # 2: each batch split in two, the last (4 samples) too
def test_unknown_length_trains_evaluates_and_predicts_like_the_arrays(data, degree):
    keras.config.set(data_parallel_degree=degree)
    x, y = data
    a = _model()
    ha = a.fit(x, y, batch_size=BATCH, epochs=3, shuffle=False, verbose=0)
    b, steps = _model(), Steps()
    hb = b.fit(Unsized(_batches(x, y)), epochs=3, verbose=0, callbacks=[steps])
    np.testing.assert_allclose(hb.history["loss"], ha.history["loss"], rtol=1e-6)
    np.testing.assert_allclose(hb.history["accuracy"], ha.history["accuracy"], rtol=1e-6)
    for wa, wb in zip(a.get_weights(), b.get_weights(), strict=True):
        np.testing.assert_allclose(wb, wa, rtol=1e-6)
    assert steps.params["steps"] is None and steps.epochs == [[0, 1, 2]] * 3  # each epoch a whole pass
    np.testing.assert_allclose(b.evaluate(Unsized(_batches(x, y)), verbose=0),
                               a.evaluate(x, y, batch_size=BATCH, verbose=0), rtol=1e-6)
    np.testing.assert_allclose(b.predict(Unsized(_batches(x, y)), verbose=0), a.predict(x, verbose=0), rtol=1e-6)
    keras.config.set(data_parallel_degree=1)


def test_validation_data_of_unknown_length_equals_the_arrays(data):
    x, y = data
    a = _model()
    ha = a.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0, validation_data=(x, y))
    b = _model()
    hb = b.fit(Unsized(_batches(x, y)), epochs=2, verbose=0, validation_data=Unsized(_batches(x, y)))
    np.testing.assert_allclose(hb.history["val_loss"], ha.history["val_loss"], rtol=1e-6)
    np.testing.assert_allclose(hb.history["val_accuracy"], ha.history["val_accuracy"], rtol=1e-6)


def test_first_epoch_bar_has_no_total_and_later_ones_count_to_its_steps(data):
    x, y = data
    out = TTY()
    _model().fit(Unsized(_batches(x, y)), epochs=2, verbose=1, callbacks=[ProgbarLogger(ProgressWriter(out))])
    first, second = out.getvalue().split("Epoch 2/2")
    assert "1/Unknown" in first and "\x1b[1m3/3\x1b[0m" in first  # the finished bar knows its steps
    assert "Unknown" not in second and "\x1b[1m3/3\x1b[0m" in second


@pytest.mark.parametrize("overlap", ["0", "1"])
def test_steps_per_epoch_continues_the_pass_across_epochs(monkeypatch, overlap):
    monkeypatch.setenv("FF_STEP_OVERLAP", overlap)
    endless = Unsized([_tag(i) for i in (1, 2, 3, 4)], endless=True)  # tf.data's .repeat(): cardinality -1
    h = _tagged().fit(endless, epochs=3, steps_per_epoch=3, verbose=0)
    # batches 1 2 3 | 4 1 2 | 3 4 1, as Keras 3 continues one iterator
    np.testing.assert_allclose(h.history["loss"], [(1 + 4 + 9) / 3, (16 + 1 + 4) / 3, (9 + 16 + 1) / 3], rtol=1e-6)


def test_a_pass_shorter_than_steps_per_epoch_cuts_the_epoch_then_starts_again(caplog):
    steps = Steps()
    with caplog.at_level(logging.WARNING, "flexflow_keras"):
        h = _tagged().fit(Unsized([_tag(i) for i in (1, 2, 3)]), epochs=3, steps_per_epoch=2, verbose=0,
                          callbacks=[steps])
    assert steps.epochs == [[0, 1], [0], [0, 1]]  # 1 2 | 3 (the data ran out) | 1 2
    np.testing.assert_allclose(h.history["loss"], [2.5, 9.0, 2.5], rtol=1e-6)
    assert sum("ran out of data" in r.message for r in caplog.records) == 1


def test_a_pass_ending_with_an_epoch_starts_a_new_one_in_the_next():
    h = _tagged().fit(Unsized([_tag(i) for i in (1, 2, 3, 4)]), epochs=3, steps_per_epoch=2, verbose=0)
    # 1 2 | 3 4 | 1 2 (Keras 3 runs an empty epoch there, loss 0.0, and starts again in the one after)
    np.testing.assert_allclose(h.history["loss"], [2.5, 12.5, 2.5], rtol=1e-6)


def test_an_endless_source_without_steps_per_epoch_runs_until_stopped():
    steps = Steps(stop_after=10)
    h = _tagged().fit(Unsized([_tag(i) for i in (1, 2, 3, 4)], endless=True), epochs=2, verbose=0,
                      callbacks=[steps])
    assert steps.epochs == [list(range(10))] and len(h.history["loss"]) == 1


def test_a_generator_is_read_once_then_fit_stops(caplog):
    def gen():
        for i in (1, 2, 3, 4, 5):
            yield _tag(i)

    with caplog.at_level(logging.WARNING, "flexflow_keras"):
        h = _tagged().fit(gen(), epochs=3, verbose=0)
    np.testing.assert_allclose(h.history["loss"], [(1 + 4 + 9 + 16 + 25) / 5], rtol=1e-6)
    assert any("interrupting training after epoch 1 of 3" in r.message for r in caplog.records)


def test_a_generator_with_steps_per_epoch_continues_then_runs_out(caplog):
    def gen():
        for i in (1, 2, 3, 4, 5):
            yield _tag(i)

    with caplog.at_level(logging.WARNING, "flexflow_keras"):
        h = _tagged().fit(gen(), epochs=3, steps_per_epoch=2, verbose=0)
    np.testing.assert_allclose(h.history["loss"], [2.5, 12.5, 25.0], rtol=1e-6)  # 1 2 | 3 4 | 5
    assert any("after 1 of its steps_per_epoch=2" in r.message for r in caplog.records)
    caplog.clear()

    def four():
        yield from (_tag(i) for i in (1, 2, 3, 4))

    h = _tagged().fit(four(), epochs=3, steps_per_epoch=4, verbose=0)  # ends exactly with epoch 1
    assert len(h.history["loss"]) == 1


def test_an_endless_pydataset_takes_steps_per_epoch_and_continues():
    class Endless(keras.utils.PyDataset):
        @property
        def num_batches(self):
            return None

        def __getitem__(self, i):
            return _tag(i % 4 + 1)

    h = _tagged().fit(Endless(), epochs=2, steps_per_epoch=3, verbose=0)
    np.testing.assert_allclose(h.history["loss"], [(1 + 4 + 9) / 3, (16 + 1 + 4) / 3], rtol=1e-6)


def test_a_real_tf_data_dataset_of_unknown_cardinality(data):
    tf = pytest.importorskip("tensorflow")
    x, y = data
    sig = (tf.TensorSpec((None, 6), tf.float32), tf.TensorSpec((None,), tf.int32))
    ds = tf.data.Dataset.from_generator(lambda: iter(_batches(x, y)), output_signature=sig)
    assert int(ds.cardinality()) == -2  # len(ds) is TypeError: The dataset length is unknown.
    a = _model()
    ha = a.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
    hb = _model().fit(ds, epochs=2, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], ha.history["loss"], rtol=1e-6)
    kept = ds.filter(lambda bx, by: tf.shape(bx)[0] == BATCH)  # the full batches
    np.testing.assert_allclose(_model().evaluate(kept, verbose=0), _model().evaluate(x[:16], y[:16], verbose=0),
                               rtol=1e-6)
