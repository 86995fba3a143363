"""RandomFourierFeatures (tf.keras 2's layers.experimental): weights, the feature map against a NumPy
reference on the layer's own weights, trainability, config round trip, argument checks, and the import path
`keras.layers.experimental`."""

import math

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.layers.experimental import RandomFourierFeatures


def _weights(layer):
    return {w.name.split("/")[-1]: np.asarray(v) for w, v in zip(layer.weights, layer.get_weights(), strict=True)}


def _model(**kwargs):
    layer = RandomFourierFeatures(64, **kwargs)
    model = keras.Sequential([keras.Input((6,)), layer])
    return model, layer


def test_feature_map_matches_numpy_reference():
    model, layer = _model(scale=3.0)
    x = np.random.default_rng(0).random((10, 6)).astype(np.float32)
    w = _weights(layer)
    assert w["unscaled_kernel"].shape == (6, 64) and w["bias"].shape == (64,) and w["kernel_scale"].shape == (1,)
    want = math.sqrt(2.0 / 64) * np.cos(x @ (w["unscaled_kernel"] / w["kernel_scale"]) + w["bias"])
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-4, atol=1e-5)


def test_default_scale_and_distributions():
    _, gauss = _model()
    w = _weights(gauss)
    assert w["kernel_scale"][0] == pytest.approx(math.sqrt(6 / 2.0))
    assert 0.0 <= w["bias"].min() and w["bias"].max() < 2 * math.pi
    assert abs(float(np.std(w["unscaled_kernel"])) - 1.0) < 0.2
    _, lap = _model(kernel_initializer="laplacian")
    assert _weights(lap)["kernel_scale"][0] == pytest.approx(1.0)


def test_frozen_by_default_and_only_the_scale_trains():
    model, layer = _model()
    assert layer.trainable_weights == []
    _, trainable = _model(trainable=True)
    assert [w.name.split("/")[-1] for w in trainable.trainable_weights] == ["kernel_scale"]
    x = np.random.default_rng(1).random((32, 6)).astype(np.float32)
    head = keras.Sequential([model, keras.layers.Dense(2)])
    head.compile("adam", "hinge")
    before = _weights(layer)
    head.fit(x, np.sign(x[:, :2] - 0.5), epochs=1, batch_size=16, verbose=0)
    after = _weights(layer)
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])


def test_config_round_trip_and_argument_checks():
    layer = RandomFourierFeatures(8, kernel_initializer="laplacian", scale=2.0, name="rff")
    config = layer.get_config()
    assert (config["output_dim"], config["kernel_initializer"], config["scale"]) == (8, "laplacian", 2.0)
    again = RandomFourierFeatures.from_config(config)
    assert (again.output_dim, again.kernel_initializer, again.scale) == (8, "laplacian", 2.0)
    with pytest.raises(ValueError, match="output_dim"):
        RandomFourierFeatures(0)
    with pytest.raises(ValueError, match="kernel_initializer"):
        RandomFourierFeatures(4, kernel_initializer="uniform")
    with pytest.raises(ValueError, match="scale"):
        RandomFourierFeatures(4, scale=-1.0)


def test_experimental_module_path():
    assert keras.layers.experimental.RandomFourierFeatures is RandomFourierFeatures
    assert keras.layers.experimental.Dense is keras.layers.Dense  # other names come from keras.layers
