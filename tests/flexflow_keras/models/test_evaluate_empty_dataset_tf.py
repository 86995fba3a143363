"""evaluate() of a dataset that gives no batch: Keras 3 warns ('Your input ran out of data') and returns [] ({}
with return_dict=True); ours raised DataError. TensorFlow's time-series tutorial evaluates every model on a
test split whose windows can be fewer than one (timeseries_dataset_from_array of 20 rows with a 25-row window
gives no window), and goes on."""

import logging

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _run(lib, t, return_dict):
    model = lib.Sequential([lib.layers.Dense(1)])
    model.compile(loss="mse", metrics=["mae"])
    model(np.zeros((1, 3), "float32"))
    windows = t.keras.preprocessing.timeseries_dataset_from_array(np.zeros((20, 3), "float32"), None,
                                                                  sequence_length=25, batch_size=4)
    ds = windows.map(lambda w: (w[:, 0], w[:, 0, :1]))
    return model.evaluate(ds, verbose=0, return_dict=return_dict)


@pytest.mark.parametrize("return_dict", [False, True])
def test_evaluate_of_an_empty_dataset_as_keras(return_dict, caplog):
    want = _run(tf.keras, tf, return_dict)
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        got = _run(ff, FFTF, return_dict)
    assert got == want and type(got) is type(want)
    assert "ran out of data" in caplog.text


def test_fit_with_an_empty_validation_dataset_as_keras():
    def run(lib, t):
        model = lib.Sequential([lib.layers.Dense(1)])
        model.compile(loss="mse", optimizer="sgd")
        x, y = np.ones((8, 3), "float32"), np.ones((8, 1), "float32")
        train = t.data.Dataset.from_tensor_slices((x, y)).batch(4)
        val = t.keras.preprocessing.timeseries_dataset_from_array(np.zeros((5, 3), "float32"), None,
                                                                  sequence_length=10, batch_size=4)
        stop = lib.callbacks.EarlyStopping(monitor="val_loss", patience=1)
        history = model.fit(train, validation_data=val.map(lambda w: (w[:, 0], w[:, 0, :1])), epochs=2,
                            verbose=0, callbacks=[stop])
        return sorted(history.history), len(history.history["loss"])

    assert run(ff, FFTF) == run(tf.keras, tf) == (["loss"], 2)
