"""fit/evaluate/predict on datasets and iterables of batches: the same numbers as the arrays they hold."""

import numpy as np
import pytest
from PIL import Image

import flexflow_keras as keras
from flexflow_keras import layers
from flexflow_keras.data.dataset import image_dataset_from_directory
from flexflow_keras.errors import DataError


def _model(shape=(6,), classes=3):
    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input(shape), layers.Flatten(), layers.Dense(classes, activation="softmax")])
    m.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


class Batches:
    """A re-iterable of (x, y) batches with a length, like a tf.data dataset."""

    def __init__(self, x, y, size):
        self.items = [(x[i:i + size], y[i:i + size].astype(np.int64)) for i in range(0, len(x), size)]

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 6)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 1).astype(np.int32)


def test_iterable_of_batches_trains_like_the_arrays(data):
    x, y = data
    a = _model()
    ha = a.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    b = _model()
    hb = b.fit(Batches(x, y, 8), epochs=2, verbose=0)
    np.testing.assert_allclose(hb.history["loss"], ha.history["loss"], rtol=1e-6)
    for wa, wb in zip(a.get_weights(), b.get_weights(), strict=True):
        np.testing.assert_allclose(wb, wa, rtol=1e-6)
    np.testing.assert_allclose(b.evaluate(Batches(x, y, 8), verbose=0), a.evaluate(x, y, batch_size=8, verbose=0),
                               rtol=1e-6)
    np.testing.assert_allclose(b.predict(iter(Batches(x, y, 8)), verbose=0), a.predict(x, verbose=0), rtol=1e-6)


def test_generator_needs_no_length_with_steps_per_epoch(data):
    x, y = data

    def forever():
        while True:
            for i in range(0, 20, 5):
                yield x[i:i + 5], y[i:i + 5]

    h = _model().fit(forever(), steps_per_epoch=4, epochs=2, verbose=0)
    assert len(h.history["loss"]) == 2 and np.all(np.isfinite(h.history["loss"]))
    # without it (Keras 3): the epoch runs until the generator ends
    h = _model().fit((b for b in Batches(x, y, 5)), epochs=1, verbose=0)
    assert len(h.history["loss"]) == 1


@pytest.fixture
def folder(tmp_path):
    rng = np.random.default_rng(2)
    for c in range(3):
        (tmp_path / f"c{c}").mkdir()
        for i in range(5):
            a = np.clip(c * 80 + rng.normal(0, 10, (3, 2)), 0, 255).astype(np.uint8)
            Image.fromarray(a, "L").save(tmp_path / f"c{c}" / f"{i}.png")
    return tmp_path


def test_image_dataset_fit_evaluate_predict_equal_the_arrays(folder):
    ds = image_dataset_from_directory(folder, color_mode="grayscale", image_size=(3, 2), batch_size=4, shuffle=False,
                                      verbose=False).map(lambda a, b: (a / 255.0, b))
    x, y = ds.to_arrays()
    weights = {0: 1.0, 1: 2.0, 2: 0.5}
    a = _model((3, 2, 1))
    ha = a.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, class_weight=weights)
    b = _model((3, 2, 1))
    hb = b.fit(ds, epochs=2, verbose=0, class_weight=weights, validation_data=ds)
    np.testing.assert_allclose(hb.history["loss"], ha.history["loss"], rtol=1e-6)
    np.testing.assert_allclose(b.evaluate(ds, verbose=0), a.evaluate(x, y, verbose=0), rtol=1e-6)
    np.testing.assert_allclose(b.predict(ds, verbose=0), a.predict(x, verbose=0), rtol=1e-6)
    assert "val_loss" in hb.history
    with pytest.raises(ValueError, match="validation_split is only supported for arrays"):
        b.fit(ds, validation_split=0.2, verbose=0)


def test_image_dataset_without_map_goes_through_the_loader_ring(folder):
    ds = image_dataset_from_directory(folder, color_mode="grayscale", image_size=(3, 2), batch_size=4, seed=5,
                                      verbose=False)
    m = _model((3, 2, 1))
    m.fit(ds, epochs=2, verbose=0)
    stalls = m._last_fit_stats["data_stalls"]
    assert [s.epoch for s in stalls] == [0, 1] and all(s.wait_s >= 0 for s in stalls)


def test_labels_of_every_batch_are_checked_against_the_output(folder):
    ds = image_dataset_from_directory(folder, color_mode="grayscale", image_size=(3, 2), batch_size=4, shuffle=False,
                                      verbose=False)
    m = _model((3, 2, 1), classes=2)  # 3 class folders, 2 units; the first batch only holds class 0
    with pytest.raises(DataError, match=r"\[0, 2\)"):
        m.fit(ds, epochs=1, verbose=0)


def test_steps_per_epoch_past_the_dataset_and_early_stop_end_cleanly(folder):
    ds = image_dataset_from_directory(folder, color_mode="grayscale", image_size=(3, 2), batch_size=4, seed=5,
                                      verbose=False)
    m = _model((3, 2, 1))
    h = m.fit(ds, epochs=2, steps_per_epoch=50, verbose=0)  # 4 batches a pass: each epoch ends after them
    assert len(h.history["loss"]) == 2 and m._last_fit_stats["samples"] == 2 * 15

    class StopAfterOne(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.model.stop_training = True

    m.fit(ds, epochs=3, verbose=0, callbacks=[StopAfterOne()])  # loads in flight are waited for, not raced
    assert m._last_fit_stats["samples"] == 4


def test_seed_flag_alone_makes_the_shuffled_order_repeatable(data):
    from flexflow_keras import config

    x, y = data
    w0 = _model().get_weights()

    def train(seed):
        m = _model()
        m.set_weights(w0)
        np.random.seed(None)  # the global generator is not what makes it repeatable
        config.set(seed=seed)
        try:
            m.fit(x, y, batch_size=4, epochs=2, shuffle=True, verbose=0)
        finally:
            config.set(seed=None)
        return m.get_weights()

    a, b, c = train(3), train(3), train(4)
    for wa, wb in zip(a, b, strict=True):
        np.testing.assert_array_equal(wa, wb)
    assert any(not np.array_equal(wa, wc) for wa, wc in zip(a, c, strict=True))


def test_endless_dataset_with_steps_per_epoch_continues_across_epochs():
    """``ds.repeat()`` (make_csv_dataset(num_epochs=None)) with steps_per_epoch: each epoch reads the next
    batches of the one stream, as tf.data's iterator; evaluate/predict read `steps` batches."""
    from flexflow_keras.data.slices import SliceDataset, bounded

    x = np.arange(30, dtype="float32").reshape(10, 3)
    y = (np.arange(10) % 2).astype(np.int64)
    ds = SliceDataset.from_tensor_slices((x, y)).repeat().batch(4)
    assert ds.is_endless() and not ds.take(3).is_endless()
    stream = bounded(ds, 2, "fit()", epochs=3)
    firsts = [np.asarray(next(stream)[0])[0, 0] for _ in range(6)]
    assert firsts == [0.0, 12.0, 24.0, 6.0, 18.0, 0.0]  # 4-row batches run on across the data's end
    model = _model(shape=(3,), classes=2)
    history = model.fit(ds, epochs=3, steps_per_epoch=2, validation_data=ds, validation_steps=1, verbose=0)
    assert len(history.history["loss"]) == 3 and len(history.history["val_loss"]) == 3
    assert np.isfinite(model.evaluate(ds, steps=2, verbose=0)[0])
    assert model.predict(ds, steps=2, verbose=0).shape == (8, 2)
    with pytest.raises(DataError, match="endless dataset .* no steps_per_epoch"):
        model.fit(ds, epochs=1, verbose=0)
