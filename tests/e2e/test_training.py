"""End-to-end training through the runtime: learning, data-parallel degrees agree, tail batches,
callbacks, and the clear errors of the training loop."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, layers
from flexflow_keras.errors import DataError, ShapeError


@pytest.fixture(autouse=True)
def clean_config(monkeypatch):
    import sys

    monkeypatch.setattr(sys, "argv", ["pytest"])
    config.reset()
    config.set(cpus=2)
    yield
    config.reset()


def blobs(n=512, d=8, k=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, d)).astype("float32") * 3
    y = rng.integers(0, k, n)
    return (centers[y] + rng.standard_normal((n, d)).astype("float32")), y


def small_model(k=3, d=8, dropout=0.0, bn=False):
    keras.utils.set_random_seed(3)
    seq = [keras.Input(shape=(d,)), layers.Dense(16, activation="relu")]
    if bn:
        seq.append(layers.BatchNormalization())
    if dropout:
        seq.append(layers.Dropout(dropout))
    seq.append(layers.Dense(k, activation="softmax"))
    return keras.Sequential(seq)


def test_mlp_learns_blobs():
    x, y = blobs()
    model = small_model()
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    hist = model.fit(x, y, batch_size=32, epochs=5, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    assert hist.history["accuracy"][-1] > 0.9
    assert model.evaluate(x, y, verbose=0)[1] > 0.9


@pytest.mark.parametrize("bn, dropout", [(False, 0.0), (True, 0.0), (False, 0.3)])
def test_every_degree_computes_the_same_numbers(bn, dropout):
    x, y = blobs(n=96)
    results = []
    for degree in (1, 2, 4):
        config.set(data_parallel_degree=degree, cpus=4)
        model = small_model(dropout=dropout, bn=bn)
        model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="sparse_categorical_crossentropy")
        hist = model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
        results.append((hist.history["loss"], model.get_weights()))
    for losses, weights in results[1:]:
        np.testing.assert_allclose(losses, results[0][0], rtol=1e-5)
        for a, b in zip(weights, results[0][1], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_tail_batch_and_epoch_loss_is_weighted_by_batch_size():
    x, y = blobs(n=70)
    model = small_model()
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="sparse_categorical_crossentropy")
    hist = model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0)
    full = model.evaluate(x, y, batch_size=70, verbose=0)
    assert hist.history["loss"][0] == pytest.approx(full, rel=1e-5)


def test_synthetic_data_when_fit_gets_none(caplog):
    model = small_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with caplog.at_level("INFO", logger="flexflow_keras"):
        model.fit(epochs=1, verbose=0)
    assert "synthetic" in caplog.text.lower()


def test_missing_dataset_path_is_an_error(tmp_path):
    config.set(dataset=str(tmp_path / "nope.npz"))
    model = small_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with pytest.raises(DataError, match="nope.npz"):
        model.fit(verbose=0)


def test_dataset_npz_is_used(tmp_path, caplog):
    x, y = blobs(n=64)
    path = tmp_path / "d.npz"
    np.savez(path, x_train=x, y_train=y)
    config.set(dataset=str(path))
    model = small_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with caplog.at_level("INFO", logger="flexflow_keras"):
        model.fit(verbose=0, batch_size=16)
    assert str(path) in caplog.text and "64" in caplog.text


def test_wrong_input_shape_is_clear():
    model = small_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with pytest.raises((ShapeError, ValueError), match=r"\(8,\)"):
        model.fit(np.zeros((10, 9), "float32"), np.zeros(10, "int64"), verbose=0)


def test_nan_in_data_says_where():
    x, y = blobs(n=40)
    x[7, 2] = np.nan
    model = small_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with pytest.raises(DataError, match=r"\(7, 2\)"):
        model.fit(x, y, verbose=0)


def test_functional_two_inputs_and_callbacks():
    x, y = blobs(n=64)
    a, b = keras.Input(shape=(8,), name="a"), keras.Input(shape=(8,), name="b")
    h = layers.concatenate([layers.Dense(8, activation="relu")(a), layers.Dense(8, activation="relu")(b)])
    out = layers.Dense(3, activation="softmax")(h)
    model = keras.Model([a, b], out)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    seen = []
    cb = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append((e, sorted(logs))))
    model.fit([x, x], y, batch_size=16, epochs=2, verbose=0, validation_split=0.25, callbacks=[cb])
    assert [e for e, _ in seen] == [0, 1]
    assert seen[0][1] == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert model.predict([x, x], verbose=0).shape == (64, 3)


def test_subclassed_model_trains():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.d1 = layers.Dense(16, activation="relu")
            self.d2 = layers.Dense(3)

        def call(self, inputs, training=False):
            return self.d2(self.d1(inputs))

    x, y = blobs()
    model = Net()
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    hist = model.fit(x, y, batch_size=32, epochs=4, verbose=0)
    assert hist.history["accuracy"][-1] > 0.85


@pytest.mark.parametrize("degree", [1, 2])
def test_constants_in_the_graph_are_replicated(degree):
    config.set(data_parallel_degree=degree)
    x, y = blobs(n=64)
    inp = keras.Input(shape=(8,))
    h = layers.Dense(3)(inp)
    out = layers.Activation("softmax")(h * 2.0 + np.ones(3, dtype="float32"))
    model = keras.Model(inp, out)
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    hist = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    assert np.isfinite(hist.history["loss"]).all()
    ref = model(x[:4])
    np.testing.assert_allclose(model.predict(x[:4], verbose=0), ref, rtol=1e-5)


def test_batchnorm_without_scale_trains_sharded():
    x, y = blobs(n=64)
    results = []
    for degree in (1, 2):
        config.set(data_parallel_degree=degree)
        keras.utils.set_random_seed(3)
        model = keras.Sequential([keras.Input(shape=(8,)), layers.Dense(8),
                                  layers.BatchNormalization(scale=False, center=False),
                                  layers.Dense(3, activation="softmax")])
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        results.append(model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0).history["loss"])
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5)


@pytest.mark.parametrize("kwargs, needle", [
    ({"optimizer": "adamm", "loss": "mse"}, "Valid optimizers"),
    ({"optimizer": "adam", "loss": "categorical_crossentropyy"}, "categorical_crossentropy"),
])
def test_unknown_names_fail_at_compile(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        small_model().compile(**kwargs)


def test_labels_that_do_not_match_the_loss_name_the_fix():
    x, y = blobs(n=16)
    model = small_model()
    model.compile(optimizer="adam", loss="categorical_crossentropy")
    with pytest.raises(DataError, match="sparse_categorical_crossentropy"):
        model.fit(x, y, verbose=0)
