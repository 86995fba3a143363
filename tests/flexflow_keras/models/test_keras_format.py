"""`model.save` / `load_model` in Keras 3's `.keras` format: round trips of Sequential, functional and
subclassed models with their compile state and optimizer slots, custom objects, atomic saves, clean
errors for damaged files, and files that interchange with tf.keras (the `tf` tests)."""

import json
import os
import zipfile

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.errors import DataError
from flexflow_keras.saving.optimizer_state import optimizer_variables

L = keras.layers
rng = np.random.default_rng(0)


def cnn(k):
    return k.Sequential([k.Input((8, 8, 1)), k.layers.Conv2D(3, 3, activation="relu"), k.layers.MaxPooling2D(),
                         k.layers.BatchNormalization(), k.layers.Flatten(), k.layers.Dropout(0.2),
                         k.layers.Dense(3, activation="softmax")])


def two_input(k):
    a = k.Input((6,), dtype="int32", name="ids")
    b = k.Input((3,), name="feats")
    e = k.layers.GlobalAveragePooling1D()(k.layers.Embedding(20, 4)(a))
    shared = k.layers.Dense(4, activation="relu", name="shared")
    h = k.layers.Concatenate()([shared(k.layers.Dense(4)(b)), e])
    return k.Model([a, b], k.layers.Dense(2, activation="softmax", name="out")(h), name="two_in")


def wide(k):
    """Most layers both frameworks have, a nested Sequential and merges, in one functional model."""
    a = k.Input((8, 8, 2), name="img")
    h = k.layers.ReLU()(k.layers.Conv2D(4, 3, padding="same")(a))
    h = k.layers.Add()([k.layers.AveragePooling2D(2)(h), k.layers.MaxPooling2D(2)(h)])
    h = k.layers.GlobalMaxPooling2D()(k.layers.Multiply()([h, k.layers.LeakyReLU()(h)]))
    h = k.layers.LayerNormalization()(k.layers.Permute((2, 1))(k.layers.Reshape((2, 2))(h)))
    inner = k.Sequential([k.Input((4,)), k.layers.Dense(5), k.layers.ELU(), k.layers.BatchNormalization()])
    h = k.layers.Activation("tanh")(inner(k.layers.Flatten()(h)))
    return k.Model(a, k.layers.Softmax()(k.layers.Dense(3)(h)))


def wide_data(n=16):
    return rng.random((n, 8, 8, 2), dtype=np.float32), rng.integers(0, 3, n)


def cnn_data(n=16):
    return rng.random((n, 8, 8, 1), dtype=np.float32), rng.integers(0, 3, n)


def two_input_data(n=16):
    return [rng.integers(0, 20, (n, 6)).astype("int32"), rng.random((n, 3), dtype=np.float32)], rng.integers(0, 2, n)


def recurrent(k):
    """Wrapped and plain recurrent layers: their weights sit on cells, their nested configs in Keras 3."""
    L = k.layers
    return k.Sequential([k.Input((5, 3)), L.TimeDistributed(L.Dense(4)),
                         L.Bidirectional(L.LSTM(4, return_sequences=True)), L.GRU(3), L.Dense(3, activation="softmax")])


def recurrent_data(n=16):
    return rng.random((n, 5, 3), dtype=np.float32), rng.integers(0, 3, n)


def trained(build, data, optimizer="adam", **fit):
    model = build(keras)
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = data()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, **fit)
    return model, x, y


def assert_same_weights(a, b):
    wa, wb = a.get_weights(), b.get_weights()
    assert len(wa) == len(wb)
    for p, q in zip(wa, wb, strict=True):
        np.testing.assert_array_equal(p, q)


@pytest.mark.parametrize("build,data", [(cnn, cnn_data), (two_input, two_input_data)])
def test_round_trip_weights_predictions_and_compile_state(tmp_path, build, data):
    model, x, y = trained(build, data)
    path = tmp_path / "m.keras"
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["config.json", "metadata.json", "model.weights.h5"]
        config = json.loads(zf.read("config.json"))
    assert set(config) >= {"module", "class_name", "config", "registered_name", "compile_config"}
    assert config["compile_config"]["optimizer"]["class_name"] == "Adam"
    loaded = keras.models.load_model(path)
    assert type(loaded).__name__ == type(model).__name__
    assert [la.name for la in loaded.layers] == [la.name for la in model.layers]
    assert_same_weights(model, loaded)
    np.testing.assert_array_equal(model.predict(x, verbose=0), loaded.predict(x, verbose=0))
    assert loaded.compiled and loaded.optimizer.iterations == model.optimizer.iterations == 2
    for p, q in zip(optimizer_variables(model), optimizer_variables(loaded), strict=True):
        np.testing.assert_array_equal(p, q)
    # fit continues: the same next steps on both (dropout masks follow the seed and the step count)
    for m in (model, loaded):
        keras.utils.set_random_seed(5)
        m.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    assert_same_weights(model, loaded)
    assert sorted(loaded.history.history) == ["accuracy", "loss"]


@pytest.mark.parametrize("optimizer", [keras.optimizers.SGD(0.1, momentum=0.9), keras.optimizers.RMSprop(
    momentum=0.5, centered=True), keras.optimizers.Adagrad(), keras.optimizers.Adam(amsgrad=True),
    keras.optimizers.SGD(0.1)])
def test_optimizer_state_round_trips_in_keras_order(tmp_path, optimizer):
    model, x, y = trained(cnn, cnn_data, optimizer=optimizer)
    saved = optimizer_variables(model)
    n_slots = len(optimizer.slot_specs((1,)))
    assert len(saved) == 2 + n_slots * len(model.trainable_weights)
    assert saved[0].dtype == np.int64 and int(saved[0]) == 2
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    assert type(loaded.optimizer) is type(optimizer)
    for p, q in zip(saved, optimizer_variables(loaded), strict=True):
        np.testing.assert_array_equal(p, q)


EVERY_LAYER = [
    (lambda: L.Dense(3, activation="relu", kernel_regularizer="l2", bias_constraint="non_neg"), (5,)),
    (lambda: L.Conv2D(2, 3, strides=2, padding="same", use_bias=False), (6, 6, 2)),
    (lambda: L.MaxPooling2D(2), (6, 6, 2)), (lambda: L.AveragePooling2D(3, strides=1), (6, 6, 2)),
    (lambda: L.GlobalAveragePooling2D(keepdims=True), (4, 4, 2)), (lambda: L.GlobalMaxPooling2D(), (4, 4, 2)),
    (lambda: L.GlobalAveragePooling1D(), (4, 3)), (lambda: L.GlobalMaxPooling1D(), (4, 3)),
    (lambda: L.BatchNormalization(momentum=0.9, epsilon=1e-2), (4,)),
    (lambda: L.LayerNormalization(epsilon=1e-4), (3, 4)),
    (lambda: L.Embedding(10, 3), (5,)), (lambda: L.Flatten(), (2, 3)), (lambda: L.Reshape((3, 2)), (6,)),
    (lambda: L.Permute((2, 1)), (2, 3)), (lambda: L.Dropout(0.5, seed=4), (4,)),
    (lambda: L.Activation("softmax"), (4,)), (lambda: L.ReLU(max_value=2.0), (4,)),
    (lambda: L.LeakyReLU(negative_slope=0.1), (4,)), (lambda: L.ELU(alpha=0.5), (4,)),
    (lambda: L.Softmax(axis=-1), (4,)),
]


@pytest.mark.parametrize("make,shape", EVERY_LAYER)
def test_every_layer_config_survives_the_file(tmp_path, make, shape):
    layer = make()
    dtype = "int32" if isinstance(layer, L.Embedding) else "float32"
    model = keras.Sequential([keras.Input(shape, dtype=dtype), layer])
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    assert loaded.layers[0].get_config() == layer.get_config()
    assert_same_weights(model, loaded)
    x = rng.integers(0, 10, (3, *shape)).astype(dtype) if dtype == "int32" else rng.random((3, *shape), np.float32)
    np.testing.assert_array_equal(model.predict(x, verbose=0), loaded.predict(x, verbose=0))


def test_unbuilt_optimizer_and_uncompiled_model(tmp_path):
    model = cnn(keras)
    model.save(tmp_path / "plain.keras")
    loaded = keras.models.load_model(tmp_path / "plain.keras")
    assert not loaded.compiled
    assert_same_weights(model, loaded)
    model.compile(optimizer="sgd", loss="mse")
    model.save(tmp_path / "compiled.keras")
    loaded = keras.models.load_model(tmp_path / "compiled.keras")
    assert loaded.compiled and loaded.optimizer.iterations == 0
    assert not keras.models.load_model(tmp_path / "compiled.keras", compile=False).compiled
    fresh = cnn(keras)
    fresh.load_weights(tmp_path / "compiled.keras")  # the weights of a whole-model file
    assert_same_weights(model, fresh)
    keras.saving.save_weights(model, tmp_path / "w.weights.h5")
    again = cnn(keras)
    keras.saving.load_weights(again, tmp_path / "w.weights.h5")
    assert_same_weights(model, again)


def test_learning_rate_changed_during_training_is_restored(tmp_path):
    model, _, _ = trained(cnn, cnn_data, optimizer=keras.optimizers.Adam(0.01))
    model.optimizer.learning_rate = 0.0025
    model.save(tmp_path / "m.keras")
    assert keras.saving.load_model(tmp_path / "m.keras").optimizer.learning_rate == 0.0025


@keras.saving.register_keras_serializable(package="Tests")
class Scale(L.Layer):
    def __init__(self, factor, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

    def call(self, x):
        return keras.ops.multiply(x, self.w) * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class Unregistered(Scale):
    pass


class NoConfig(L.Layer):
    def __init__(self, factor, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        return x * self.factor


def test_custom_layers_registered_and_by_custom_objects(tmp_path):
    model = keras.Sequential([keras.Input((3,)), Scale(2.0), L.Dense(2)])
    model.layers[0].w.assign(np.array([1.0, 2.0, 3.0], np.float32))
    model.save(tmp_path / "reg.keras")
    loaded = keras.models.load_model(tmp_path / "reg.keras")
    assert isinstance(loaded.layers[0], Scale) and loaded.layers[0].factor == 2.0
    assert_same_weights(model, loaded)
    other = keras.Sequential([keras.Input((3,)), Unregistered(3.0)])
    other.save(tmp_path / "unreg.keras")
    with pytest.raises(DataError, match=r"unknown class 'Unregistered'.*custom_objects=\{'Unregistered'"):
        keras.models.load_model(tmp_path / "unreg.keras")
    back = keras.models.load_model(tmp_path / "unreg.keras", custom_objects={"Unregistered": Unregistered})
    assert isinstance(back.layers[0], Unregistered) and back.layers[0].factor == 3.0
    with keras.saving.custom_object_scope({"Unregistered": Unregistered}):
        assert isinstance(keras.models.load_model(tmp_path / "unreg.keras").layers[0], Unregistered)


def test_layer_without_get_config_names_the_class_and_fix(tmp_path):
    # a plain value (NoConfig(2.0)) is saved by Keras 3's auto config (test_layer_auto_config_tf.py); an array is not
    model = keras.Sequential([keras.Input((3,)), NoConfig(np.float32([2.0, 1.0, 3.0]))])
    with pytest.raises(NotImplementedError, match=r"NoConfig .*\['factor'\].*get_config\(\)"):
        model.save(tmp_path / "m.keras")
    assert not os.path.exists(tmp_path / "m.keras")


class MLP(keras.Model):
    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.hidden = L.Dense(units, activation="relu")
        self.out = L.Dense(2)

    def call(self, x, training=False):
        return self.out(self.hidden(x))


class MLPWithConfig(MLP):
    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_subclassed_models(tmp_path):
    model = MLP(units=np.int64(4))  # not a plain value: no automatic config (plain ones: test_model_auto_config_tf)
    model.build((None, 3))
    with pytest.raises(NotImplementedError, match=r"Model MLP is a subclassed model without get_config\(\).*"
                                                  r"save_weights"):
        model.save(tmp_path / "mlp.keras")
    model = MLPWithConfig(units=5)
    model.compile(optimizer="adam", loss="mse")
    x = rng.random((8, 3), dtype=np.float32)
    model.fit(x, rng.random((8, 2), dtype=np.float32), epochs=1, verbose=0)
    model.save(tmp_path / "mlp.keras")
    loaded = keras.models.load_model(tmp_path / "mlp.keras", custom_objects={"MLPWithConfig": MLPWithConfig})
    assert loaded.units == 5
    np.testing.assert_array_equal(model.predict(x, verbose=0), loaded.predict(x, verbose=0))


@keras.saving.register_keras_serializable(package="Tests")
def double(x):
    return x * 2


def test_lambda_layers(tmp_path):
    anonymous = keras.Sequential([keras.Input((3,)), L.Lambda(lambda x: x * 2)])
    with pytest.raises(ValueError, match=r"Lambda layer 'lambda' wraps an anonymous lambda.*register"):
        anonymous.save(tmp_path / "anon.keras")
    named = keras.Sequential([keras.Input((3,)), L.Lambda(double)])
    named.save(tmp_path / "named.keras")
    x = rng.random((2, 3), dtype=np.float32)
    np.testing.assert_array_equal(keras.models.load_model(tmp_path / "named.keras").predict(x, verbose=0), 2 * x)


@keras.saving.register_keras_serializable(package="Tests")
def half_mse(y_true, y_pred):
    return keras.ops.mean(keras.ops.square(y_true - y_pred), axis=-1) * 0.5


def custom_mae(y_true, y_pred):
    return keras.ops.mean(keras.ops.abs(y_true - y_pred), axis=-1)


def test_custom_loss_and_metric_functions_in_the_compile_state(tmp_path):
    model = keras.Sequential([keras.Input((3,)), L.Dense(2)])
    model.compile(optimizer="sgd", loss=half_mse, metrics=[custom_mae])
    x, y = rng.random((8, 3), dtype=np.float32), rng.random((8, 2), dtype=np.float32)
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras", custom_objects={"custom_mae": custom_mae})
    assert loaded._loss_arg is half_mse and loaded._metrics_arg == [custom_mae]
    np.testing.assert_allclose(loaded.evaluate(x, y, verbose=0), model.evaluate(x, y, verbose=0), rtol=1e-6)


def test_save_argument_errors(tmp_path):
    model = cnn(keras)
    with pytest.raises(ValueError, match=r"must end in `\.keras`.*save_weights"):
        model.save(tmp_path / "m.weights.h5")
    with pytest.raises(ValueError, match=r"must end in `\.keras`.*SavedModel"):
        model.save(tmp_path / "m_savedmodel")
    model.save(tmp_path / "m.h5")  # Keras' legacy HDF5 file (saving/legacy_h5.py)
    with pytest.raises(FileExistsError):
        model.save(tmp_path / "m.h5", overwrite=False)
    model.save(tmp_path / "m.keras")
    with pytest.raises(FileExistsError):
        model.save(tmp_path / "m.keras", overwrite=False)
    with pytest.raises(FileNotFoundError, match=r"the directory .*nodir does not exist.*os\.makedirs"):
        model.save(tmp_path / "nodir" / "m.keras")
    unbuilt = keras.Sequential([L.Dense(2)])
    with pytest.raises(ValueError, match="has not been built"):
        unbuilt.save(tmp_path / "u.keras")


def _write(path, data: bytes):
    with open(path, "wb") as f:
        f.write(data)


def test_damaged_and_foreign_files_give_clean_errors(tmp_path):
    model = cnn(keras)
    good = tmp_path / "good.keras"
    model.save(good)
    data = good.read_bytes()
    cases = {"truncated.keras": (data[: len(data) // 2], "not a complete zip archive"),
             "noise.keras": (rng.bytes(500), "not a complete zip archive"),
             "empty.keras": (b"", "not a complete zip archive")}
    for name, (content, message) in cases.items():
        _write(tmp_path / name, content)
        with pytest.raises(DataError, match=rf"{name} \(\d+ bytes\) is not a readable \.keras model file: "
                                            rf"{message}.*Load an earlier checkpoint"):
            keras.models.load_model(tmp_path / name)
    with zipfile.ZipFile(tmp_path / "other.keras", "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(DataError, match=r"has no config\.json or model\.weights\.h5"):
        keras.models.load_model(tmp_path / "other.keras")
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(tmp_path / "badh5.keras", "w") as zf:
        zf.writestr("config.json", src.read("config.json"))
        zf.writestr("model.weights.h5", src.read("model.weights.h5")[:300])
    with pytest.raises(DataError, match=r"model\.weights\.h5 inside it is not readable HDF5"):
        keras.models.load_model(tmp_path / "badh5.keras")
    with pytest.raises(DataError, match="does not exist"):
        keras.models.load_model(tmp_path / "missing.keras")
    model.save_weights(tmp_path / "w.weights.h5")
    with pytest.raises(DataError, match=r"holds weights only.*load_weights"):
        keras.models.load_model(tmp_path / "w.weights.h5")
    _write(tmp_path / "model.h5", b"legacy")
    with pytest.raises(DataError, match=r"model\.h5 is not a readable HDF5 file.*cut short"):
        keras.models.load_model(tmp_path / "model.h5")  # a legacy .h5 name that holds something else
    _write(tmp_path / "cut.weights.h5", (tmp_path / "w.weights.h5").read_bytes()[:700])
    with pytest.raises(DataError, match=r"cut\.weights\.h5 \(700 bytes\) is not a readable HDF5"):
        model.load_weights(tmp_path / "cut.weights.h5")


def test_a_failed_save_leaves_the_previous_file(tmp_path, monkeypatch):
    model = cnn(keras)
    path = tmp_path / "m.keras"
    model.save(path)
    before = path.read_bytes()
    model.layers[-1].kernel.assign(np.ones(model.layers[-1].kernel.shape, np.float32))

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", boom)
    with pytest.raises(OSError, match="disk full"):
        model.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.keras"]  # no temporary left behind
    model.save(path)
    assert path.read_bytes() != before


def test_functional_config_round_trip_without_files():
    model = two_input(keras)
    config = model.get_config()
    assert config["input_layers"] == [["ids", 0, 0], ["feats", 0, 0]]
    assert config["output_layers"] == ["out", 0, 0]
    shared = next(e for e in config["layers"] if e["name"] == "shared")
    assert shared["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] == "dense"
    clone = keras.Model.from_config(config)
    assert [la.name for la in clone.layers] == [la.name for la in model.layers]
    clone.set_weights(model.get_weights())
    x, _ = two_input_data(4)
    np.testing.assert_array_equal(model.predict(x, verbose=0), clone.predict(x, verbose=0))


# --- tf.keras interchange ------------------------------------------------------------------------------
@pytest.fixture
def tf():
    return pytest.importorskip("tensorflow")


def _tf_optimizer_arrays(model):
    return [np.asarray(v) for v in model.optimizer.variables]


INTERCHANGE = [(cnn, cnn_data, "adam"), (two_input, two_input_data, "adam"), (wide, wide_data, "rmsprop"),
               (recurrent, recurrent_data, "adam"), (cnn, cnn_data, "nadam"), (cnn, cnn_data, "adadelta"),
               (cnn, cnn_data, "adamax"), (cnn, cnn_data, "ftrl"), (cnn, cnn_data, "lamb"),
               (cnn, cnn_data, "adafactor"), (cnn, cnn_data, "schedulefreeadamw")]


@pytest.mark.tf
@pytest.mark.parametrize("build,data,optimizer", INTERCHANGE)
def test_tf_keras_file_loads_here(tmp_path, tf, build, data, optimizer):
    theirs = build(tf.keras)
    if optimizer in ("lamb", "schedulefreeadamw"):  # Keras 3's get() does not know them by name
        optimizer = {"lamb": tf.keras.optimizers.Lamb, "schedulefreeadamw": tf.keras.optimizers.ScheduleFreeAdamW}[
            optimizer]()
    theirs.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = data()
    theirs.fit(x, y, batch_size=8, epochs=1, verbose=0)
    theirs.save(tmp_path / "tf.keras")
    ours = keras.models.load_model(tmp_path / "tf.keras")
    for p, q in zip(theirs.get_weights(), ours.get_weights(), strict=True):
        np.testing.assert_array_equal(p, q)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert ours.compiled and ours.optimizer.iterations == 2 and ours.optimizer.name == theirs.optimizer.name
    for p, q in zip(_tf_optimizer_arrays(theirs), optimizer_variables(ours), strict=True):
        np.testing.assert_array_equal(np.asarray(p, dtype=q.dtype), q)
    ours.fit(x, y, batch_size=8, epochs=1, verbose=0)


@pytest.mark.tf
@pytest.mark.parametrize("build,data,optimizer", INTERCHANGE)
def test_our_file_loads_in_tf_keras(tmp_path, tf, build, data, optimizer):
    ours, x, y = trained(build, data, optimizer=optimizer)
    ours.save(tmp_path / "ours.keras")
    theirs = tf.keras.models.load_model(tmp_path / "ours.keras")
    for p, q in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_array_equal(p, q)
    np.testing.assert_allclose(theirs.predict(x, verbose=0), ours.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert int(theirs.optimizer.iterations) == 2
    for p, q in zip(optimizer_variables(ours), _tf_optimizer_arrays(theirs), strict=True):
        np.testing.assert_array_equal(p, np.asarray(q, dtype=p.dtype))
    theirs.fit(x, y, batch_size=8, epochs=1, verbose=0)


@pytest.mark.tf
def test_tf_keras_files_with_what_we_lack_are_clear_errors(tmp_path, tf):
    theirs = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3)])
    theirs.compile(optimizer="muon", loss="mse")
    theirs.save(tmp_path / "muon.keras")
    with pytest.raises(DataError, match=r"muon\.keras holds a compile_config .*Muon.*compile=False"):
        keras.models.load_model(tmp_path / "muon.keras")
    loaded = keras.models.load_model(tmp_path / "muon.keras", compile=False)
    np.testing.assert_array_equal(loaded.get_weights()[0], theirs.get_weights()[0])
    other = tf.keras.Sequential([tf.keras.Input((4, 4, 3)), tf.keras.layers.RandomGrayscale()])
    other.save(tmp_path / "gray.keras")
    with pytest.raises(DataError, match=r"gray\.keras: unknown class 'RandomGrayscale'.*does not implement it"):
        keras.models.load_model(tmp_path / "gray.keras")


@pytest.mark.parametrize("ext", ["keras", "h5"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_functional_mask_zero_model_saves_and_masks_after_load(tmp_path, ext, dtype):
    """An Embedding(mask_zero=True) feeding an LSTM in a functional model: the mask the LSTM receives
    implicitly is no layer of the model (Keras records none), so the model saves (a ModelCheckpoint
    callback too), and the loaded model masks the padding as the original did."""
    inp = keras.Input((6,), dtype=dtype)
    out = L.Dense(1, activation="sigmoid")(L.LSTM(4)(L.Embedding(20, 3, mask_zero=True)(inp)))
    m = keras.Model(inp, out)
    m.compile("adam", "binary_crossentropy")
    x = rng.integers(1, 20, (16, 6))
    x[:, 4:] = 0
    m.fit(x, rng.integers(0, 2, 16), epochs=1, verbose=0,
          callbacks=[keras.callbacks.ModelCheckpoint(str(tmp_path / f"ck.{ext}"))])
    assert [type(layer).__name__ for layer in m.layers] == ["InputLayer", "Embedding", "LSTM", "Dense"]
    m.save(tmp_path / f"m.{ext}")
    m2 = keras.models.load_model(tmp_path / f"m.{ext}")
    np.testing.assert_allclose(m2.predict(x, verbose=0), m.predict(x, verbose=0), rtol=0, atol=0)
    shorter = keras.Sequential([keras.Input((4,), dtype=dtype), L.Embedding(20, 3), L.LSTM(4),
                                L.Dense(1, activation="sigmoid")])
    shorter.set_weights(m2.get_weights())  # the padded steps must not count
    np.testing.assert_allclose(m2.predict(x, verbose=0), shorter.predict(x[:, :4], verbose=0), atol=1e-6)


@pytest.mark.parametrize("name", ["missing.keras", "missing.h5", "missing.weights.h5"])
def test_a_missing_file_is_an_oserror_as_in_tf_keras(tmp_path, name):
    """`try: model = load_model(p) except OSError: build()`: resume scripts rely on it."""
    model = cnn(keras)
    load = model.load_weights if name.endswith(".weights.h5") else keras.models.load_model
    with pytest.raises(OSError, match="does not exist") as info:
        load(tmp_path / name)
    assert isinstance(info.value, DataError)  # and one clean line on the command line
