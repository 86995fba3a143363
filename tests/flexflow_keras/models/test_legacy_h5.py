"""`model.save("x.h5")` writes Keras' legacy HDF5 whole-model file, which tf.keras loads; `load_model`
and `load_weights` read legacy files back: ours, Keras 3's legacy writer's, and Keras 2's (tf_keras, the
Keras 2 that TensorFlow ships separately), with the same predictions and the compile state."""

import numpy as np
import pytest

import flexflow_keras as keras


def _model():
    inp = keras.Input((6,))
    h = keras.layers.Dense(5, activation="relu", name="hidden")(inp)
    h = keras.layers.BatchNormalization(name="bn")(h)
    out = keras.layers.Dense(3, activation="softmax", name="out")(h)
    model = keras.Model(inp, out)
    model.compile("adam", "categorical_crossentropy")
    return model


def _text(values):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def test_layout_lists_layers_and_weights_in_keras_order(tmp_path):
    h5py = pytest.importorskip("h5py")
    model = _model()
    model.save(tmp_path / "m.h5")
    with h5py.File(tmp_path / "m.h5", "r") as f:
        assert '"class_name": "Functional"' in f.attrs["model_config"]
        group = f["model_weights"]
        names = _text(group.attrs["layer_names"])
        assert names == [layer.name for layer in model.layers]
        bn = group["bn"]
        assert _text(bn.attrs["weight_names"]) == ["gamma", "beta", "moving_mean", "moving_variance"]
        np.testing.assert_array_equal(group["hidden"]["kernel"][()], model.get_layer("hidden").get_weights()[0])


@pytest.mark.tf
def test_tf_keras_loads_the_file_with_the_same_outputs(tmp_path):
    tf = pytest.importorskip("tensorflow")
    model = _model()
    x = np.random.default_rng(0).random((8, 6)).astype(np.float32)
    model.fit(x, np.eye(3, dtype=np.float32)[np.arange(8) % 3], epochs=1, verbose=0)
    model.save(tmp_path / "m.h5")
    theirs = tf.keras.models.load_model(tmp_path / "m.h5", compile=False)
    np.testing.assert_allclose(theirs.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)


def test_our_legacy_file_loads_back(tmp_path):
    pytest.importorskip("h5py")
    keras.config.set(only_data_parallel=True)
    try:
        model = _model()
        x = np.random.default_rng(0).random((8, 6)).astype(np.float32)
        model.save(tmp_path / "m.h5")
        again = keras.models.load_model(tmp_path / "m.h5", compile=False)
        np.testing.assert_allclose(again.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
        other = _model()
        with pytest.raises(ValueError, match="layer 'wide' \\(Dense\\) has weights of shapes"):
            keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, name="wide"), keras.layers.Dense(3),
                              keras.layers.Dense(3)]).load_weights(tmp_path / "m.h5")
        with pytest.raises(ValueError, match="holds weights for 3 layers .* has 2 layers with weights"):
            keras.Sequential([keras.Input((6,)), keras.layers.Dense(3), keras.layers.Dense(3)]).load_weights(
                tmp_path / "m.h5")
        other.load_weights(tmp_path / "m.h5")  # a whole-model legacy file also serves load_weights
        np.testing.assert_allclose(other.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    finally:
        keras.config.reset()


def test_a_compiled_model_loads_back_compiled(tmp_path):
    # Keras 2 scripts save to .h5 and evaluate the loaded model at once: the compile arguments travel in
    # the file's training_config (Keras 3's legacy layout); the optimizer's state does not
    h5py = pytest.importorskip("h5py")
    keras.config.set(only_data_parallel=True)
    try:
        model = _model()
        model.compile(keras.optimizers.RMSprop(0.003), "categorical_crossentropy",
                      metrics=["accuracy", keras.metrics.AUC(name="auc")], loss_weights=[0.5])
        x = np.random.default_rng(0).random((16, 6)).astype(np.float32)
        y = np.eye(3, dtype=np.float32)[np.arange(16) % 3]
        model.fit(x, y, epochs=1, verbose=0)
        model.save(tmp_path / "m.h5")
        with h5py.File(tmp_path / "m.h5", "r") as f:
            assert '"optimizer_config"' in f.attrs["training_config"]
        again = keras.models.load_model(tmp_path / "m.h5")
        assert again.compiled
        assert type(again.optimizer).__name__ == "RMSprop"
        assert float(again.optimizer.learning_rate) == pytest.approx(0.003)
        ours = model.evaluate(x, y, verbose=0, return_dict=True)
        theirs = again.evaluate(x, y, verbose=0, return_dict=True)
        assert set(theirs) == {"loss", "accuracy", "auc"}
        for k in ours:
            assert theirs[k] == pytest.approx(ours[k], rel=1e-5), k
        model.save(tmp_path / "bare.h5", include_optimizer=False)
        with h5py.File(tmp_path / "bare.h5", "r") as f:
            assert "training_config" not in f.attrs
        assert not keras.models.load_model(tmp_path / "bare.h5").compiled
    finally:
        keras.config.reset()


def _keras2_models(k2):
    seq = k2.Sequential([k2.layers.Conv2D(4, 3, activation="relu", input_shape=(8, 8, 1)),
                         k2.layers.BatchNormalization(), k2.layers.MaxPooling2D(), k2.layers.Flatten(),
                         k2.layers.Dense(5, activation="relu"), k2.layers.Dropout(0.2),
                         k2.layers.Dense(3, activation="softmax")])
    seq.compile(k2.optimizers.Adam(2e-3), "categorical_crossentropy", metrics=["accuracy"])
    inp = k2.Input((6, 4))
    seqs = k2.layers.LSTM(5, return_sequences=True)(inp)
    merged = k2.layers.concatenate([k2.layers.GRU(3)(seqs), k2.layers.GlobalAveragePooling1D()(seqs)])
    fun = k2.Model(inp, k2.layers.Dense(2)(merged))
    fun.compile("sgd", "mse")
    return seq, fun


@pytest.mark.tf
def test_keras2_files_load_with_the_same_predictions_and_compile_state(tmp_path):
    k2 = pytest.importorskip("tf_keras")
    rng = np.random.default_rng(0)
    seq, fun = _keras2_models(k2)
    x, xs = rng.random((16, 8, 8, 1)).astype("float32"), rng.random((4, 6, 4)).astype("float32")
    seq.fit(x, np.eye(3)[rng.integers(0, 3, 16)], epochs=1, verbose=0)  # moving statistics move
    seq.save(tmp_path / "seq.h5")
    seq.save_weights(tmp_path / "seq_weights.h5")
    fun.save(tmp_path / "fun.h5")
    keras.config.set(only_data_parallel=True)
    try:
        ours = keras.models.load_model(tmp_path / "seq.h5")
        np.testing.assert_allclose(ours.predict(x, verbose=0), seq.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
        assert type(ours.optimizer).__name__ == "Adam"
        assert float(ours.optimizer.learning_rate) == pytest.approx(2e-3)
        assert ours.evaluate(x, np.eye(3)[np.arange(16) % 3], verbose=0, return_dict=True).keys() >= {"accuracy"}
        ours_fun = keras.models.load_model(tmp_path / "fun.h5")
        np.testing.assert_allclose(ours_fun.predict(xs, verbose=0), fun.predict(xs, verbose=0), rtol=1e-5, atol=1e-6)
        built = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(4, 3, activation="relu"),
                                  keras.layers.BatchNormalization(), keras.layers.MaxPooling2D(),
                                  keras.layers.Flatten(), keras.layers.Dense(5, activation="relu"),
                                  keras.layers.Dropout(0.2), keras.layers.Dense(3, activation="softmax")])
        built.load_weights(tmp_path / "seq_weights.h5")  # Keras 2's save_weights("x.h5") layout
        np.testing.assert_allclose(built.predict(x, verbose=0), seq.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    finally:
        keras.config.reset()


@pytest.mark.tf
def test_keras3_legacy_file_loads(tmp_path):
    tf = pytest.importorskip("tensorflow")
    inp = tf.keras.Input((6,))
    model = tf.keras.Model(inp, tf.keras.layers.Dense(3, activation="softmax")(tf.keras.layers.Dense(5)(inp)))
    model.compile("rmsprop", "categorical_crossentropy")
    model.save(tmp_path / "k3.h5")
    x = np.random.default_rng(1).random((4, 6)).astype("float32")
    ours = keras.models.load_model(tmp_path / "k3.h5", compile=False)
    np.testing.assert_allclose(ours.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)


def test_keras2_save_weights_to_h5_reads_back_here_and_in_tf_keras(tmp_path):
    """Keras 2's `save_weights("x.h5")` (the Keras 2.3.1 VAE example) writes the legacy layout."""
    h5py = pytest.importorskip("h5py")
    model = _model()
    x = np.random.default_rng(0).random((8, 6)).astype(np.float32)
    model.save_weights(tmp_path / "w.h5")
    with h5py.File(tmp_path / "w.h5", "r") as f:
        assert _text(f.attrs["layer_names"]) == [layer.name for layer in model.layers]
        assert _text(f["bn"].attrs["weight_names"]) == ["gamma", "beta", "moving_mean", "moving_variance"]
    again = _model()
    again.load_weights(tmp_path / "w.h5")
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
    tf_keras = pytest.importorskip("tf_keras")  # Keras 2
    inp = tf_keras.Input((6,))
    h = tf_keras.layers.BatchNormalization(name="bn")(tf_keras.layers.Dense(5, activation="relu", name="hidden")(inp))
    theirs = tf_keras.Model(inp, tf_keras.layers.Dense(3, activation="softmax", name="out")(h))
    theirs.load_weights(str(tmp_path / "w.h5"))
    np.testing.assert_allclose(theirs.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
