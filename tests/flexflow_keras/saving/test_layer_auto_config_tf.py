"""A custom layer that does not override get_config is saved with its constructor arguments when they are
plain values, as Keras 3's auto config (layers/auto_config.py): keras.io's mixture_of_experts recipe saves
a model with Conv2DMoE(filters, kernel_size, n_experts, ...) and no get_config; tf.keras saves and reloads
it, we raised NotSerializableError."""

import numpy as np
import pytest

import flexflow_keras as ffk
from flexflow_keras.saving.errors import NotSerializableError


def _scale_class(keras):
    class Scale(keras.layers.Layer):
        def __init__(self, units, factor, activation=None, sizes=(1, 2), **kwargs):
            super().__init__(**kwargs)
            self.units, self.factor, self.activation, self.sizes = units, factor, activation, sizes

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="ones")

        def call(self, x):
            y = keras.ops.matmul(x, self.w) * self.factor
            return keras.activations.get(self.activation)(y)

    return Scale


def test_default_get_config_returns_plain_constructor_arguments():
    Scale = _scale_class(ffk)
    layer = Scale(3, 0.5, activation="relu", name="s")
    config = layer.get_config()
    assert {k: config[k] for k in ("units", "factor", "activation", "name")} == {
        "units": 3, "factor": 0.5, "activation": "relu", "name": "s"}
    assert Scale.from_config(config).factor == 0.5
    assert "units" not in Scale(3, np.float32(2.0) * np.ones(2)).get_config()  # an array: no auto config


def test_model_with_auto_config_layer_saves_and_reloads(tmp_path):
    Scale = _scale_class(ffk)
    inp = ffk.Input((4,))
    model = ffk.Model(inp, Scale(3, 0.5, activation="relu")(inp))
    path = str(tmp_path / "m.keras")
    model.save(path)
    again = ffk.models.load_model(path, custom_objects={"Scale": Scale})
    x = np.random.RandomState(0).rand(2, 4).astype("float32")
    np.testing.assert_allclose(again.predict(x, verbose=0), model.predict(x, verbose=0))
    assert again.layers[-1].factor == 0.5

    class Opaque(ffk.layers.Layer):
        def __init__(self, table):
            super().__init__()
            self.table = table

        def call(self, x):
            return x

    with pytest.raises(NotSerializableError, match="Opaque"):
        ffk.Model(inp, Opaque(np.ones(3))(inp)).save(str(tmp_path / "o.keras"))


def test_auto_config_as_tf():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    theirs, ours = _scale_class(keras)(3, 0.5, activation="relu", name="s"), _scale_class(ffk)(
        3, 0.5, activation="relu", name="s")
    expected, got = theirs.get_config(), ours.get_config()
    for key in ("name", "units", "factor", "activation", "trainable"):
        assert got[key] == expected[key], key
