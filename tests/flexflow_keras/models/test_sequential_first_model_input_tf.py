"""A Sequential whose first layer is a model with a known input (a built Sequential, a functional model) is
built from that model's input, as Keras 3 builds it (Sequential._maybe_rebuild uses the first layer's
`input_shape`). TensorFlow's image classification tutorial puts `data_augmentation = Sequential([RandomFlip(
input_shape=...), ...])` first in its model and reads the weights before training: ours left the outer model
unbuilt (no weights, `input_shape` []), so set_weights/get_weights and summary saw nothing.
An unbuilt Sequential's input_shape / output_shape raise AttributeError, as Keras 3's do."""

import numpy as np
import pytest

import flexflow_keras as ffk


def _nested(keras):
    aug = keras.Sequential([keras.layers.RandomFlip("horizontal", input_shape=(6, 6, 3)),
                            keras.layers.RandomZoom(0.1)])
    return keras.Sequential([aug, keras.layers.Rescaling(1.0 / 255), keras.layers.Conv2D(2, 3, activation="relu"),
                             keras.layers.Flatten(), keras.layers.Dense(3, name="outputs")])


def _structure(keras):
    rows = {}
    m = _nested(keras)
    rows["nested"] = (m.built, m.input_shape, m.output_shape, [tuple(w.shape) for w in m.get_weights()])
    inner = keras.Sequential([keras.layers.Dense(4, input_shape=(5,))])
    m = keras.Sequential([inner])  # one layer: Keras 3 builds only from a second layer on
    with pytest.raises(AttributeError, match="no defined input shape"):
        _ = m.input_shape
    with pytest.raises(AttributeError, match="no defined output shape"):
        _ = m.output_shape
    rows["single"] = m.built
    m.add(keras.layers.Dense(3))
    rows["added"] = (m.built, m.input_shape, len(m.weights))
    fin = keras.Input((6,))
    fmodel = keras.Model(fin, keras.layers.Dense(2)(fin))
    m = keras.Sequential([fmodel, keras.layers.Dense(1)])
    rows["functional"] = (m.built, m.input_shape, m.output_shape, len(m.weights))
    m = keras.Sequential()
    m.add(keras.Sequential([keras.layers.Dense(2)]))
    m.add(keras.layers.Dense(1))
    rows["unbuilt_inner"] = m.built
    rows["config_shape"] = tuple(keras.Sequential([keras.Sequential([keras.layers.Dense(4, input_shape=(5,))]),
                                                   keras.layers.Dense(3)]).get_config()["build_input_shape"])
    return rows


def test_first_model_input_builds_the_sequential_without_tf():
    rows = _structure(ffk)
    assert rows["nested"] == (True, (None, 6, 6, 3), (None, 3), [(3, 3, 3, 2), (2,), (32, 3), (3,)])
    assert rows["single"] is False
    assert rows["added"] == (True, (None, 5), 4)
    assert rows["functional"] == (True, (None, 6), (None, 1), 4)
    assert rows["unbuilt_inner"] is False
    assert rows["config_shape"] == (None, 5)


def test_first_model_input_as_tf():
    keras = pytest.importorskip("keras")
    assert _structure(ffk) == _structure(keras)


def test_nested_first_model_trains_and_round_trips_as_tf(tmp_path):
    keras = pytest.importorskip("keras")
    theirs, ours = _nested(keras), _nested(ffk)
    ours.set_weights(theirs.get_weights())
    x = np.random.default_rng(0).uniform(0, 255, (8, 6, 6, 3)).astype("float32")
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "nested.keras")
    ours.save(path)
    back = ffk.models.load_model(path)
    assert back.built and back.input_shape == (None, 6, 6, 3)
    np.testing.assert_allclose(back.predict(x, verbose=0), ours.predict(x, verbose=0), rtol=1e-6)
