"""The misc layers through the layer harness (with tf.keras parity on copied weights), the noise layers'
training statistics, Normalization.adapt against tf.keras, and the layers inside models trained by fit."""

import numpy as np
import pytest
from ff_layer_harness import make_data, run_layer_test, tf_keras

from flexflow_keras import layers, models


# --- layers that are the identity in inference ------------------------------------------------------------
@pytest.mark.parametrize("name,kwargs,shape", [
    ("GaussianNoise", dict(stddev=0.3, seed=1), (4, 5)),
    ("GaussianDropout", dict(rate=0.3, seed=1), (4, 5)),
    ("AlphaDropout", dict(rate=0.2, seed=1), (4, 5)),
    ("SpatialDropout1D", dict(rate=0.3, seed=1), (4, 3, 5)),
    ("SpatialDropout2D", dict(rate=0.3, seed=1), (2, 3, 3, 4)),
    ("ActivityRegularization", dict(l1=0.01, l2=0.02), (4, 5)),
    ("Identity", dict(), (4, 5)),
])
def test_identity_in_inference(name, kwargs, shape, parity):
    _, out, data = run_layer_test(getattr(layers, name), kwargs, input_shape=shape,
                                  expected_output_shape=(None,) + shape[1:], compare_tf=parity, tf_layer=name)
    np.testing.assert_array_equal(out, data[0])


def test_noise_layers_in_training():
    x = make_data((200, 40))
    noise = layers.GaussianNoise(0.5, seed=3)(x, training=True) - x
    assert abs(noise.mean()) < 0.02 and abs(noise.std() - 0.5) < 0.02
    factor = layers.GaussianDropout(0.2, seed=3)(x, training=True) / x
    assert abs(factor.mean() - 1) < 0.02 and abs(factor.std() - 0.5) < 0.02  # sqrt(0.2 / 0.8)
    y = layers.AlphaDropout(0.1, seed=3)(x, training=True)
    assert abs(y.mean()) < 0.03 and abs(y.std() - 1) < 0.03  # SELU's fixed point is kept
    k = tf_keras()
    if k is not None:  # the same statistics as tf.keras' AlphaDropout
        theirs = np.asarray(k.layers.AlphaDropout(0.1, seed=3)(x, training=True))
        assert abs(theirs.mean() - y.mean()) < 0.05 and abs(theirs.std() - y.std()) < 0.05
    x3 = np.abs(make_data((8, 6, 10))) + 0.1
    y3 = layers.SpatialDropout1D(0.5, seed=2)(x3, training=True)
    dropped = (y3 == 0).all(axis=1)  # a channel is dropped at every step or at none
    np.testing.assert_allclose(y3, x3 * ~dropped[:, None, :] / 0.5, rtol=1e-6)
    assert 0.3 < dropped.mean() < 0.7
    x4 = np.abs(make_data((4, 3, 3, 6))) + 0.1
    y4 = layers.SpatialDropout2D(0.5, seed=2, data_format="channels_first")(x4, training=True)
    assert set(np.unique((y4 == 0).reshape(4, 3, -1).mean(-1))) <= {0.0, 1.0}


# --- layers with deterministic outputs ----------------------------------------------------------------
@pytest.mark.parametrize("kwargs,shape,n", [(dict(), (4, 5), 1), (dict(shared_axes=[1, 2]), (2, 3, 3, 4), 1)])
def test_prelu(kwargs, shape, n, parity):
    layer, out, data = run_layer_test(layers.PReLU, kwargs, input_shape=shape, expected_output_shape=(None,) + shape[1:],
                                      expected_num_weights=n, compare_tf=parity, tf_layer="PReLU",
                                      randomize_weights=True)
    alpha = layer.alpha.numpy()
    np.testing.assert_allclose(out, np.where(data[0] > 0, data[0], alpha * data[0]), rtol=1e-6)


@pytest.mark.parametrize("name,kwargs,shape", [
    ("Rescaling", dict(scale=1 / 255.0), (4, 5)),
    ("Rescaling", dict(scale=0.5, offset=-1.0), (2, 3, 4)),
    ("Normalization", dict(mean=[1.0, 2.0, 3.0], variance=[1.0, 4.0, 0.25]), (4, 3)),
    ("Normalization", dict(axis=1, mean=[0.5, -0.5], variance=[2.0, 3.0]), (4, 2, 3)),
    ("Normalization", dict(mean=2.0, variance=9.0, invert=True), (4, 3)),
    ("UnitNormalization", dict(), (4, 5)),
    ("UnitNormalization", dict(axis=[1, 2]), (2, 3, 4)),
])
def test_deterministic_layers(name, kwargs, shape, parity):
    run_layer_test(getattr(layers, name), kwargs, input_shape=shape, expected_output_shape=(None,) + shape[1:],
                   compare_tf=parity, tf_layer=name)


@pytest.mark.parametrize("mode,shape,out", [("one_hot", (5, 1), (None, 10)), ("multi_hot", (5, 3), (None, 10)),
                                            ("count", (5, 4), (None, 10)), ("one_hot", (4, 3), (None, 3, 10))])
def test_category_encoding(mode, shape, out, parity):
    run_layer_test(layers.CategoryEncoding, dict(num_tokens=10, output_mode=mode), input_shape=shape,
                   input_dtype="int32", expected_output_shape=out, compare_tf=parity, tf_layer="CategoryEncoding")
    with pytest.raises(ValueError, match="outside \\[0, 10\\)"):
        layers.CategoryEncoding(num_tokens=10, output_mode=mode)(np.full(shape, 10))


@pytest.mark.parametrize("axes,shapes,out", [(1, [(4, 5), (4, 5)], (None, 1)), (2, [(3, 4, 5), (3, 2, 5)], (None, 4, 2)),
                                             ((1, 1), [(3, 4, 5), (3, 4, 2)], (None, 5, 2)),
                                             ((2, 1), [(3, 4, 5), (3, 5, 2)], (None, 4, 2))])
def test_dot(axes, shapes, out, parity):
    run_layer_test(layers.Dot, dict(axes=axes), input_shape=shapes, expected_output_shape=out, compare_tf=parity,
                   tf_layer="Dot")


def test_dot_normalize_is_cosine(parity):
    _, out, (a, b) = run_layer_test(layers.Dot, dict(axes=1, normalize=True), input_shape=[(4, 6), (4, 6)],
                                    expected_output_shape=(None, 1), compare_tf=parity, tf_layer="Dot")
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(out[:, 0], cos, rtol=1e-5)


# --- Normalization.adapt ----------------------------------------------------------------------------------
@pytest.mark.parametrize("axis,shape", [(-1, (50, 4)), (None, (30, 3)), ((1, 2), (20, 3, 2)), (1, (20, 3, 2))])
def test_normalization_adapt_matches_tf(axis, shape):
    data = make_data(shape, seed=4) * 3 + 1
    layer = layers.Normalization(axis=axis)
    layer.adapt(data)
    mean, var, count = layer.get_weights()
    keep = {a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis or ())}
    reduce = tuple(d for d in range(len(shape)) if d not in keep)
    np.testing.assert_allclose(mean, data.mean(reduce), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, data.var(reduce), rtol=1e-5)
    # batches of an iterable give the same statistics (Chan's pairwise update)
    batched = layers.Normalization(axis=axis)
    batched.adapt(iter([data[:7], data[7:19], data[19:]]))
    for a, b in zip(batched.get_weights()[:2], (mean, var), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    y = layer(data)
    np.testing.assert_allclose(y, (data - mean.reshape(layer._bshape)) / np.sqrt(var.reshape(layer._bshape)),
                               rtol=1e-4, atol=1e-5)
    k = tf_keras()
    if k is not None:
        import tensorflow as tf

        theirs = k.layers.Normalization(axis=axis)
        theirs.adapt(tf.data.Dataset.from_tensor_slices(data).batch(16))
        np.testing.assert_allclose(mean, np.asarray(theirs.mean).reshape(mean.shape), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(var, np.asarray(theirs.variance).reshape(var.shape), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(y, np.asarray(theirs(data)), rtol=1e-4, atol=1e-5)
        ours_ds = layers.Normalization(axis=axis)
        ours_ds.adapt(tf.data.Dataset.from_tensor_slices(data).batch(16))
        np.testing.assert_allclose(ours_ds.get_weights()[0], mean, rtol=1e-5, atol=1e-6)


def test_normalization_adapt_after_build_and_errors():
    inp = layers.Input((3,))
    norm = layers.Normalization()
    model = models.Model(inp, norm(inp))
    data = make_data((40, 3)) * 2 + 5
    norm.adapt(data)  # adapted after the graph was recorded: the model reads the new statistics
    out = model.predict(data, verbose=0)
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-4)
    np.testing.assert_allclose(out.std(0), 1, atol=1e-3)
    with pytest.raises(ValueError, match="both mean and variance"):
        layers.Normalization(mean=1.0)
    with pytest.raises(ValueError, match="cannot change them"):
        layers.Normalization(mean=1.0, variance=1.0).adapt(data)
    with pytest.raises(ValueError, match="no data"):
        layers.Normalization().adapt(iter([]))


# --- argument checks ----------------------------------------------------------------------------------------
def test_argument_errors_name_the_layer():
    with pytest.raises(ValueError, match="GaussianNoise 'gn' expects stddev"):
        layers.GaussianNoise(-1, name="gn")
    with pytest.raises(ValueError, match="AlphaDropout 'ad' expects rate in \\[0, 1\\)"):
        layers.AlphaDropout(1.0, name="ad")
    with pytest.raises(ValueError, match="CategoryEncoding 'ce' expects output_mode"):
        layers.CategoryEncoding(3, output_mode="tf_idf", name="ce")
    with pytest.raises(ValueError, match="sparse=True is not supported"):
        layers.CategoryEncoding(3, sparse=True)
    with pytest.raises(ValueError, match="PReLU 'p' expects shared_axes"):
        layers.PReLU(shared_axes=[0], name="p")
    with pytest.raises(ValueError, match="Dot 'd' expects axes"):
        layers.Dot(axes="x", name="d")
    with pytest.raises(ValueError, match="attention_axes=\\(2,\\) is not supported"):
        m = layers.MultiHeadAttention(2, 3, attention_axes=2)
        m(layers.Input((4, 5, 6)), layers.Input((4, 5, 6)))
    assert layers.LeakyReLU(alpha=0.2).negative_slope == 0.2  # Keras 2's spelling
