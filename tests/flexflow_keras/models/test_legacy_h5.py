"""`model.save("x.h5")` writes Keras' legacy HDF5 whole-model file, which tf.keras loads."""

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
