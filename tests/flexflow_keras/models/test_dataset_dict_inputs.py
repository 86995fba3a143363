"""Datasets of dict features fed to a model of named Inputs, as keras.io's structured-data scripts build them
(from_tensor_slices((dict(dataframe), labels)).batch(n)): matched by name whatever the dict's order, and
(N,) columns taken by Inputs of shape (1,) (Keras' rank rule), in fit, evaluate and predict."""

import numpy as np

import flexflow_keras as keras
from flexflow_keras import layers
from flexflow_keras.data.slices import SliceDataset


def _model():
    age = keras.Input(shape=(1,), name="age")
    sex = keras.Input(shape=(2,), name="sex")
    model = keras.Model({"age": age, "sex": sex},
                        layers.Dense(1, kernel_initializer="ones")(layers.concatenate([age, sex])))
    model.compile(keras.optimizers.SGD(0.01), "mse")
    return model


def test_dict_batches_are_matched_by_name_and_ranked():
    rng = np.random.default_rng(0)
    data = {"sex": rng.random((16, 2)).astype("float32"), "age": rng.random(16).astype("float32")}  # (N,)
    y = rng.random(16).astype("float32")
    model = _model()
    want_pred = model.predict({"age": data["age"][:, None], "sex": data["sex"]}, verbose=0)
    want_loss = model.evaluate({"age": data["age"][:, None], "sex": data["sex"]}, y, verbose=0)
    ds = SliceDataset.from_tensor_slices((data, y)).batch(4)
    np.testing.assert_allclose(model.predict(ds, verbose=0), want_pred, rtol=1e-6)
    assert abs(model.evaluate(ds, verbose=0) - want_loss) < 1e-6
    hist = model.fit(ds, epochs=3, verbose=0).history["loss"]
    twin = _model()
    twin_hist = twin.fit({"age": data["age"][:, None], "sex": data["sex"]}, y, batch_size=4, epochs=3, verbose=0,
                         shuffle=False).history["loss"]
    np.testing.assert_allclose(hist, twin_hist, rtol=1e-5)


def test_batches_of_other_lengths_train_and_a_fixed_length_says_which_it_expects():
    import pytest

    from flexflow_keras.utils.py_dataset import PyDataset

    class Ragged(PyDataset):  # padded per batch to its longest row, as TextVectorization without a length
        def __len__(self):
            return 3

        def __getitem__(self, i):
            x = np.ones((2, [5, 7, 6][i]), "int64")
            return x, x

    for length, fails in ((None, False), (5, True)):
        inp = keras.Input(shape=(length,), dtype="int64")
        model = keras.Model(inp, layers.Dense(6, activation="softmax")(layers.Embedding(6, 4)(inp)))
        model.compile("adam", "sparse_categorical_crossentropy")
        if fails:  # models/shape_variants.py: a step graph per length where the model's Input is open
            with pytest.raises(ValueError, match=r"expects samples of shape \(5,\), received \([67],\)"):
                model.fit(Ragged(), epochs=1, verbose=0)
        else:
            assert np.isfinite(model.fit(Ragged(), epochs=1, verbose=0).history["loss"][0])


def test_a_command_line_batch_size_says_it_cannot_resize_a_dataset(monkeypatch, caplog):
    import logging
    import sys

    from flexflow_keras import config

    monkeypatch.setattr(sys, "argv", ["train.py", "-b", "16"])
    config.reset()
    try:
        model = _model()
        ds = SliceDataset.from_tensor_slices(({"age": np.ones((8, 1), "float32"), "sex": np.ones((8, 2), "float32")},
                                              np.zeros(8, "float32"))).batch(4)
        with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
            model.fit(ds, epochs=1, verbose=0)
        assert any("-b/--batch-size 16 on the command line does not apply" in r.getMessage() for r in caplog.records)
    finally:
        monkeypatch.setattr(sys, "argv", ["pytest"])
        config.reset()
