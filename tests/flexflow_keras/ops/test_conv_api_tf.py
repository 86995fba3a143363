"""Keras 3's keras.ops.conv / conv_transpose / depthwise_conv / separable_conv (1-D to 3-D), max_pool and
average_pool, and the raw TensorFlow calls
the runner maps onto them and onto other ops (tf.nn.conv2d, tf.linalg.einsum, tf.add_n, tf.clip_by_value),
against TensorFlow."""

import numpy as np
import pytest

from flexflow_keras import ops
from flexflow_keras.errors import ArgumentError
from flexflow_keras.tf_compat import mapped_call

tf = pytest.importorskip("tensorflow")
keras = tf.keras
pytestmark = pytest.mark.tf

rng = np.random.default_rng(0)


def _close(ours, theirs):
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("rank", [1, 2])
@pytest.mark.parametrize("strides,padding,dilation", [(1, "valid", 1), (2, "same", 1), (1, "same", 2)])
def test_conv_family_matches_keras(rank, strides, padding, dilation):
    spatial = (9,) * rank
    x = rng.standard_normal((2, *spatial, 3)).astype("float32")
    k = rng.standard_normal((3,) * rank + (3, 4)).astype("float32")
    _close(ops.conv(x, k, strides, padding, None, dilation), keras.ops.conv(x, k, strides, padding, None, dilation))
    dk = rng.standard_normal((3,) * rank + (3, 2)).astype("float32")
    _close(ops.depthwise_conv(x, dk, strides, padding, None, dilation),
           keras.ops.depthwise_conv(x, dk, strides, padding, None, dilation))
    pk = rng.standard_normal((1,) * rank + (6, 5)).astype("float32")
    _close(ops.separable_conv(x, dk, pk, strides, padding, None, dilation),
           keras.ops.separable_conv(x, dk, pk, strides, padding, None, dilation))
    if dilation == 1:
        tk = rng.standard_normal((3,) * rank + (4, 3)).astype("float32")
        _close(ops.conv_transpose(x, tk, strides, padding), keras.ops.conv_transpose(x, tk, strides, padding))
    first = np.moveaxis(x, -1, 1)
    # (TensorFlow's CPU convolution takes NCHW only where its oneDNN kernels are on: AVX-512 hosts)
    _close(ops.conv(first, k, strides, padding, "channels_first", dilation),
           np.moveaxis(np.asarray(keras.ops.conv(x, k, strides, padding, None, dilation)), -1, 1))


@pytest.mark.parametrize("strides,padding,dilation", [(1, "valid", 1), ((2, 1, 2), "same", 1),
                                                      (1, "same", (2, 1, 1))])
def test_three_d_convolutions_match_keras(strides, padding, dilation):
    x = rng.standard_normal((2, 6, 7, 5, 3)).astype("float32")
    k = rng.standard_normal((3, 2, 3, 3, 4)).astype("float32")
    _close(ops.conv(x, k, strides, padding, None, dilation), keras.ops.conv(x, k, strides, padding, None, dilation))
    first = np.moveaxis(x, -1, 1)
    _close(ops.conv(first, k, strides, padding, "channels_first", dilation),
           np.moveaxis(np.asarray(keras.ops.conv(x, k, strides, padding, None, dilation)), -1, 1))
    if dilation == 1:
        tk = rng.standard_normal((3, 2, 3, 4, 3)).astype("float32")
        _close(ops.conv_transpose(x, tk, strides, padding), keras.ops.conv_transpose(x, tk, strides, padding))


def test_three_d_depthwise_convolutions_are_a_clear_error():
    with pytest.raises(ArgumentError, match="3-D depthwise and separable convolutions are not implemented"):
        ops.depthwise_conv(np.zeros((1, 4, 4, 4, 1), "float32"), np.zeros((2, 2, 2, 1, 1), "float32"))


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("pool_size,strides,padding", [(2, None, "valid"), (3, 2, "same"), (2, 1, "valid")])
def test_max_and_average_pool_match_keras(rank, pool_size, strides, padding):
    x = np.round(rng.standard_normal((2, *(7,) * rank, 3)) * 2).astype("float32") / 2
    for ours, theirs in ((ops.max_pool, keras.ops.max_pool), (ops.average_pool, keras.ops.average_pool)):
        _close(ours(x, pool_size, strides, padding), theirs(x, pool_size, strides, padding))
        first = np.moveaxis(x, -1, 1)
        _close(ours(first, pool_size, strides, padding, "channels_first"),
               np.moveaxis(np.asarray(theirs(x, pool_size, strides, padding)), -1, 1))
    with pytest.raises(ArgumentError, match="padding must be 'valid' or 'same'"):
        ops.max_pool(x, 2, padding="causal")


def test_pooling_ops_train_inside_a_model():
    import flexflow_keras as ff

    ff.utils.set_random_seed(1)
    inp = ff.Input((6, 6, 4, 2))
    h = ff.layers.Conv3D(3, 2, padding="same")(inp)
    h = ff.layers.Lambda(lambda t: ff.ops.average_pool(ff.ops.max_pool(t, 2, padding="same"), (1, 3, 2)))(h)
    model = ff.Model(inp, ff.layers.Dense(1)(ff.layers.Flatten()(h)))
    model.compile("adam", "mse")
    x = rng.standard_normal((8, 6, 6, 4, 2)).astype("float32")
    losses = model.fit(x, x.sum(axis=(1, 2, 3, 4))[:, None] / 10, epochs=3, batch_size=4, verbose=0).history["loss"]
    assert losses[-1] < losses[0]


def test_raw_tensorflow_calls_map_onto_the_ops():
    x = rng.standard_normal((1, 8, 8, 3)).astype("float32")
    k = rng.standard_normal((3, 3, 3, 2)).astype("float32")
    for strides, padding in (([1, 1, 1, 1], "SAME"), (2, "VALID")):
        _close(mapped_call("tf.nn.conv2d")(x, k, strides=strides, padding=padding),
               tf.nn.conv2d(x, k, strides=strides, padding=padding))
    for dilations, padding in (([1, 2, 3, 1], "SAME"), (2, "VALID")):  # atrous: taps dilations apart
        _close(mapped_call("tf.nn.conv2d")(x, k, strides=1, padding=padding, dilations=dilations),
               tf.nn.conv2d(x, k, strides=1, padding=padding, dilations=dilations))
    for rate, padding in ((2, "SAME"), (3, "VALID")):
        _close(mapped_call("tf.nn.atrous_conv2d")(x, k, rate, padding), tf.nn.atrous_conv2d(x, k, rate, padding))
    v = rng.standard_normal((2, 5, 6, 7, 3)).astype("float32")
    k3 = rng.standard_normal((2, 3, 2, 3, 4)).astype("float32")
    _close(mapped_call("tf.nn.conv3d")(v, k3, strides=[1, 1, 2, 1, 1], padding="SAME"),
           tf.nn.conv3d(v, k3, strides=[1, 1, 2, 1, 1], padding="SAME"))
    for name, a, ksize, strides in (("max_pool2d", x, 2, 2), ("avg_pool2d", x, [1, 3, 3, 1], [1, 2, 1, 1]),
                                    ("max_pool3d", v, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1]), ("avg_pool3d", v, 2, 1),
                                    ("max_pool", v, 3, 2), ("avg_pool1d", x[0], 2, 2)):
        for padding in ("SAME", "VALID"):
            _close(mapped_call(f"tf.nn.{name}")(a, ksize, strides, padding),
                   getattr(tf.nn, name)(a, ksize, strides, padding))
    first = np.moveaxis(x, -1, 1)  # channels first: TensorFlow's CPU pools only NHWC, so its result transposed
    _close(mapped_call("tf.nn.max_pool2d")(first, [1, 1, 2, 2], [1, 1, 2, 2], "VALID", data_format="NCHW"),
           np.moveaxis(tf.nn.max_pool2d(x, 2, 2, "VALID").numpy(), -1, 1))
    _close(mapped_call("tf.nn.avg_pool2d")(x, [3], [2], "SAME"), tf.nn.avg_pool2d(x, [3], [2], "SAME"))
    _close(mapped_call("tf.nn.conv2d")(first, k, [1, 1, 2, 1], "SAME", data_format="NCHW"),
           np.moveaxis(tf.nn.conv2d(x, k, [1, 2, 1, 1], "SAME").numpy(), -1, 1))
    _close(mapped_call("tf.linalg.einsum")("bijc,bijd->bcd", x, x), tf.linalg.einsum("bijc,bijd->bcd", x, x))
    _close(mapped_call("tf.add_n")([x, x, 2 * x]), tf.add_n([x, x, 2 * x]))
    _close(mapped_call("tf.clip_by_value")(x, clip_value_min=-0.5, clip_value_max=0.3),
           tf.clip_by_value(x, clip_value_min=-0.5, clip_value_max=0.3))


def test_tf_random_gamma_shapes_and_integer_clipping():
    gamma = mapped_call("tf.random.gamma")
    assert np.asarray(gamma(shape=[4], alpha=0.2)).shape == (4,)
    assert np.asarray(gamma(shape=[1], alpha=[0.25])).shape == (1, 1)  # shape + alpha's shape, as TensorFlow
    draws = np.asarray(gamma(shape=[20000], alpha=2.0, beta=4.0))
    assert draws.dtype == np.float32 and abs(draws.mean() - 0.5) < 0.02  # beta is a rate: mean alpha / beta
    x = np.array([-3, 5, 40], np.int32)
    out = np.asarray(ops.clip(x, 0, 32))
    assert out.dtype == np.int32 and out.tolist() == [0, 5, 32]
    assert np.asarray(mapped_call("tf.clip_by_value")(x[0] - 40, 0, 32)).tolist() == 0
