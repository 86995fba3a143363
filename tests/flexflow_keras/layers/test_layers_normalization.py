"""BatchNormalization and LayerNormalization through the layer harness, and BatchNorm's training mode."""

import numpy as np
import pytest
from ff_layer_harness import make_data, run_layer_test, tf_keras

from flexflow_keras import layers


@pytest.mark.parametrize("kwargs,shape", [
    (dict(), (4, 6)),
    (dict(momentum=0.9, epsilon=1e-5), (4, 3, 3, 5)),
    (dict(axis=1), (4, 5, 3, 3)),
    (dict(center=False), (4, 6)),
])
def test_batch_normalization_inference(kwargs, shape, parity):
    n = 4 - (0 if kwargs.get("center", True) else 1)
    layer, _, _ = run_layer_test(layers.BatchNormalization, kwargs, input_shape=shape,
                                 expected_output_shape=(None,) + shape[1:], expected_num_weights=n,
                                 expected_num_trainable=n - 2, compare_tf=parity, tf_layer="BatchNormalization", randomize_weights=True)
    names = [w.name for w in layer.weights]
    assert names[-2:] == ["moving_mean", "moving_variance"] and names[0] == "gamma"


def test_batch_normalization_training_uses_batch_statistics():
    layer = layers.BatchNormalization(epsilon=1e-3)
    x = make_data((16, 5)) * 3 + 2
    y = layer(x, training=True)
    ref = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    k = tf_keras()
    if k is not None:
        theirs = k.layers.BatchNormalization(epsilon=1e-3)
        theirs(x)
        theirs.set_weights(layer.get_weights())
        np.testing.assert_allclose(y, np.asarray(theirs(x, training=True)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kwargs,shape,wshape", [
    (dict(), (3, 7), (7,)),
    (dict(epsilon=1e-5), (3, 4, 6), (6,)),
    (dict(axis=[-2, -1]), (3, 4, 6), (4, 6)),
    (dict(scale=False), (3, 7), (7,)),
])
def test_layer_normalization(kwargs, shape, wshape, parity):
    n = 1 if kwargs.get("scale", True) is False else 2
    layer, _, _ = run_layer_test(layers.LayerNormalization, kwargs, input_shape=shape,
                                 expected_output_shape=(None,) + shape[1:], expected_num_weights=n,
                                 compare_tf=parity, tf_layer="LayerNormalization", randomize_weights=True)
    assert layer.weights[0].shape == wshape


def test_normalization_argument_errors():
    with pytest.raises(ValueError, match=r"BatchNormalization 'bn' cannot use the batch axis"):
        layers.BatchNormalization(axis=0, name="bn")(layers.Input((3,)))
    with pytest.raises(ValueError, match="momentum"):
        layers.BatchNormalization(momentum=2)
    with pytest.raises(ValueError, match="trailing axes only"):
        layers.LayerNormalization(axis=1)(layers.Input((3, 4)))


@pytest.mark.parametrize("shape, axis", [((8, 8, 3), -1), ((4, 6, 5), 1), ((4, 6, 5), (1, 2)), ((3, 4, 5), (1, 3))])
def test_normalization_weights_on_images_and_inner_axes(shape, axis):
    """An unadapted Normalization keeps its statistics as weights of the kept dims' shape (EfficientNet's
    stem loads them from a file): on a 4D image or with inner kept axes they broadcast as in Keras."""
    from flexflow_keras import Input, Model
    from flexflow_keras.layers import Normalization

    rng = np.random.default_rng(0)
    inputs = Input(shape)
    norm = Normalization(axis=axis)
    model = Model(inputs, norm(inputs))
    mean, var = rng.random(norm.weights[0].shape) + 0.5, rng.random(norm.weights[1].shape) + 0.5
    norm.set_weights([mean, var, np.array(7)])
    x = rng.random((2,) + shape).astype(np.float32)
    bshape = tuple(s if d in norm._keep else 1 for d, s in enumerate((2,) + shape))
    want = (x - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape))
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)
