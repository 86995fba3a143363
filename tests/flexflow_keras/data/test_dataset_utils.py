"""keras.utils.timeseries_dataset_from_array and split_dataset on NumPy arrays (Keras 3's windows and sizes;
batches of a PyDataset and arrays where Keras returns tf.data), the packing helpers, the interactive-logging
switch, and the clear error of a Keras 3 utility flexflow_keras does not have."""

import logging

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.errors import DataError

DATA = np.arange(20).reshape(10, 2)
TARGETS = np.arange(100, 110)


def test_timeseries_windows_follow_start_stride_and_sampling_rate():
    ds = keras.utils.timeseries_dataset_from_array(DATA, TARGETS, sequence_length=3, sequence_stride=2,
                                                   sampling_rate=2, batch_size=2, start_index=1, end_index=9)
    batches = list(ds)
    assert len(ds) == 1 and len(batches) == 1
    x, y = batches[0]
    # Keras 3 on the same arguments: [[[2, 3], [6, 7], [10, 11]], [[6, 7], [10, 11], [14, 15]]], [101, 103]
    assert x.tolist() == [[[2, 3], [6, 7], [10, 11]], [[6, 7], [10, 11], [14, 15]]]
    assert y.tolist() == [101, 103]


def test_timeseries_without_targets_batches_every_window():
    ds = keras.utils.timeseries_dataset_from_array(DATA, None, sequence_length=4, batch_size=3)
    shapes = [np.shape(b) for b in ds]
    assert shapes == [(3, 4, 2), (3, 4, 2), (1, 4, 2)]  # 7 windows, as Keras 3
    first = ds.take(1)[0]
    np.testing.assert_array_equal(first[0], DATA[:4])
    assert first.numpy().shape == (3, 4, 2)  # keras-io's weather example calls .numpy() on batches
    assert keras.preprocessing.timeseries_dataset_from_array is keras.utils.timeseries_dataset_from_array


def test_timeseries_shuffle_keeps_each_window_with_its_target():
    ds = keras.utils.timeseries_dataset_from_array(DATA, TARGETS, sequence_length=2, batch_size=None,
                                                   shuffle=True, seed=3)
    seen = [(x[0, 0] // 2, y - 100) for x, y in ds]
    assert sorted(seen) == [(i, i) for i in range(9)] and seen != sorted(seen)


def test_a_timeseries_dataset_trains():
    series = np.sin(np.arange(400, dtype="float32") / 10)[:, None]
    ds = keras.utils.timeseries_dataset_from_array(series[:-5], series[5:, 0], sequence_length=5, batch_size=32)
    model = keras.Sequential([keras.Input((5, 1)), keras.layers.Flatten(), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    hist = model.fit(ds, epochs=2, verbose=0)
    assert len(hist.history["loss"]) == 2 and np.isfinite(hist.history["loss"]).all()
    assert model.predict(ds, verbose=0).shape == (len(series) - 5 - 4, 1)


def test_timeseries_windows_chain_as_a_tf_data_dataset_as_the_time_series_tutorial():
    """TensorFlow's time-series tutorial maps its windows (``ds.map(self.split_window)``); the dataset was a
    PyDataset without map. The batches equal tf.keras' on the same series (no shuffle)."""
    tf = pytest.importorskip("tensorflow")
    series = np.arange(60, dtype=np.float32).reshape(20, 3)

    def split(features, stack):
        return features[:, :4, :], stack([features[:, 4:, 1]], axis=-1)

    theirs = tf.keras.utils.timeseries_dataset_from_array(series, None, sequence_length=6, batch_size=4)
    theirs = theirs.map(lambda w: split(w, tf.stack))
    ours = keras.utils.timeseries_dataset_from_array(series, None, sequence_length=6, batch_size=4)
    ours = ours.map(lambda w: split(w, np.stack)).prefetch(2).cache()
    pairs = list(zip(ours, theirs, strict=True))
    assert len(pairs) == 4  # 15 windows in batches of 4
    for (x, y), (tx, ty) in pairs:
        np.testing.assert_array_equal(x.numpy(), tx.numpy())
        np.testing.assert_array_equal(y.numpy(), ty.numpy())
    assert [b[0].shape for b in ours.unbatch().batch(5)] == [(5, 4, 3)] * 3
    model = keras.Sequential([keras.Input((4, 3)), keras.layers.Flatten(), keras.layers.Dense(2),
                              keras.layers.Reshape((2, 1))])
    model.compile(optimizer="adam", loss="mse")
    assert np.isfinite(model.fit(ours, epochs=1, verbose=0).history["loss"]).all()


def test_timeseries_arguments_are_checked():
    with pytest.raises(DataError, match="sequence_length must be a positive integer"):
        keras.utils.timeseries_dataset_from_array(DATA, None, sequence_length=0)
    with pytest.raises(DataError, match="0 <= start_index < end_index"):
        keras.utils.timeseries_dataset_from_array(DATA, None, 2, start_index=5, end_index=3)


@pytest.mark.parametrize(("n", "left", "right", "sizes"), [
    (10, 0.35, None, (4, 6)), (10, 0.25, None, (2, 8)), (9, 0.5, None, (4, 5)), (10, None, 0.25, (8, 2)),
    (10, 3, None, (3, 7)), (10, None, 3, (7, 3)), (10, 2, 3, (2, 3)),
])
def test_split_sizes_round_as_keras(n, left, right, sizes):
    a, b = keras.utils.split_dataset(np.arange(n), left_size=left, right_size=right)
    assert (len(a), len(b)) == sizes  # Keras 3's counts on the same arguments (fractions rounded half to even)
    np.testing.assert_array_equal(a, np.arange(sizes[0]))
    np.testing.assert_array_equal(b, np.arange(n - sizes[1], n))  # the right part from the end, as Keras


def test_split_keeps_a_tuple_aligned_and_shuffles_with_a_seed():
    x, y = np.arange(10), np.arange(10) * 2
    (xa, ya), (xb, yb) = keras.utils.split_dataset((x, y), left_size=0.3, shuffle=True, seed=1)
    np.testing.assert_array_equal(ya, xa * 2)
    np.testing.assert_array_equal(yb, xb * 2)
    assert sorted(np.concatenate([xa, xb]).tolist()) == list(range(10))
    with pytest.raises(DataError, match="same length"):
        keras.utils.split_dataset((x, y[:5]), left_size=2)
    with pytest.raises(DataError, match="left_size must be a fraction in \\(0, 1\\) or a number of samples"):
        keras.utils.split_dataset(x, left_size=1.5)
    with pytest.raises(DataError, match="give left_size, right_size or both"):
        keras.utils.split_dataset(x)


def test_pack_and_unpack_x_y_sample_weight():
    u = keras.utils
    assert u.unpack_x_y_sample_weight((1, 2)) == (1, 2, None)
    assert u.unpack_x_y_sample_weight(1) == (1, None, None)
    assert u.pack_x_y_sample_weight(1) == 1 and u.pack_x_y_sample_weight((1, 2)) == ((1, 2),)
    assert u.pack_x_y_sample_weight(1, 2) == (1, 2) and u.pack_x_y_sample_weight(1, 2, 3) == (1, 2, 3)


def test_disabled_interactive_logging_sends_progress_to_the_logger(caplog, capsys):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    keras.utils.disable_interactive_logging()
    try:
        assert not keras.utils.is_interactive_logging_enabled()
        with caplog.at_level(logging.INFO, logger="flexflow_keras"):
            model.fit(np.ones((16, 4)), np.ones(16), batch_size=8, epochs=1, verbose=2)
    finally:
        keras.utils.enable_interactive_logging()
    assert "2/2" not in capsys.readouterr().out
    assert any(r.getMessage().startswith("2/2 - ") and "loss:" in r.getMessage() for r in caplog.records)


def test_a_missing_keras_utility_says_what_to_use():
    from flexflow_keras.utils import UnsupportedUtilityError

    with pytest.raises(UnsupportedUtilityError, match="Config is not available in flexflow_keras: use a plain dict"):
        keras.utils.Config()
    assert not hasattr(keras.utils, "bounding_boxes")
