"""tf.nn.conv1d/2d/3d_transpose, conv_transpose, depthwise_conv2d and separable_conv2d under the runner
(tf_conv_ops.py) against TensorFlow 2.21: values and shapes for every output size TensorFlow accepts
(Keras' output_padding computed from output_shape), TensorFlow's error for an impossible one, gradients
under our GradientTape, and a layer calling them in a model."""

import itertools

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402
from flexflow_keras.keras_alias import RawTensorFlowError  # noqa: E402
from flexflow_keras.tf_compat import InvalidArgumentError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 4, 3)).astype(np.float32)


def _sizes(i, k, s, pad):
    return ((i - 1) * s + 1, i * s) if pad == "SAME" else ((i - 1) * s + k, (i - 1) * s + k + s - 1)


GRID = [(k, s, pad) for k, s, pad in itertools.product([1, 2, 3, 4], [1, 2, 3], ["SAME", "VALID"])]


@pytest.mark.parametrize(("k", "s", "pad"), GRID)
def test_conv2d_transpose_gives_every_output_size_tensorflow_accepts(k, s, pad):
    f = RNG.standard_normal((k, k, 5, 3)).astype(np.float32)
    for oh, ow in itertools.product(range(_sizes(3, k, s, pad)[0], _sizes(3, k, s, pad)[1] + 1), _sizes(4, k, s, pad)):
        want = tf.nn.conv2d_transpose(X, f, [2, oh, ow, 5], [1, s, s, 1], pad).numpy()
        got = FFTF.nn.conv2d_transpose(X, f, [2, oh, ow, 5], [1, s, s, 1], pad)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv1d_conv3d_and_generic_transpose():
    x1, f1 = X[:, 0], RNG.standard_normal((3, 4, 3)).astype(np.float32)
    x3, f3 = X[:, :, :, None, :].repeat(2, 3), RNG.standard_normal((2, 2, 2, 4, 3)).astype(np.float32)
    for path, args in [("conv1d_transpose", (x1, f1, [2, 9, 4], 2, "VALID")),
                       ("conv_transpose", (x1, f1, [2, 8, 4], [2], "SAME")),
                       ("conv3d_transpose", (x3, f3, [2, 6, 8, 4, 4], 2, "SAME")),
                       ("conv_transpose", (X, RNG.standard_normal((3, 2, 4, 3)).astype(np.float32), [2, 7, 9, 4],
                                           [2, 2], "VALID"))]:
        want = getattr(tf.nn, path)(*args).numpy()
        np.testing.assert_allclose(getattr(FFTF.nn, path)(*args), want, rtol=1e-5, atol=1e-5, err_msg=path)


@pytest.mark.parametrize(("out", "pad"), [([2, 7, 8, 5], "SAME"), ([2, 4, 8, 5], "SAME"), ([2, 6, 12, 5], "VALID")])
def test_an_output_shape_the_input_cannot_come_from_is_tensorflows_error(out, pad):
    f = np.ones((3, 3, 5, 3), np.float32)
    with pytest.raises(tf.errors.OpError):  # InvalidArgumentError, or oneDNN's AbortedError on this CPU
        tf.nn.conv2d_transpose(X, f, out, 2, pad)
    with pytest.raises(InvalidArgumentError, match=r"cannot come from an input of size \d+ .* give a size from"):
        FFTF.nn.conv2d_transpose(X, f, out, 2, pad)


def test_transpose_arguments_that_are_not_mapped_or_wrong():
    f = np.ones((3, 3, 5, 3), np.float32)
    with pytest.raises(RawTensorFlowError, match="dilations"):
        FFTF.nn.conv2d_transpose(X, f, [2, 5, 6, 5], 1, "SAME", dilations=2)
    with pytest.raises(InvalidArgumentError, match="out_channels 5"):
        FFTF.nn.conv2d_transpose(X, f, [2, 6, 8, 4], 2, "SAME")
    with pytest.raises(InvalidArgumentError, match="batch 3"):
        FFTF.nn.conv2d_transpose(X, f, [3, 6, 8, 5], 2, "SAME")


DEPTHWISE = [({"strides": [1, 1, 1, 1], "padding": "SAME"}), ({"strides": [1, 2, 2, 1], "padding": "VALID"}),
             ({"strides": [1, 2, 1, 1], "padding": "SAME"}),
             ({"strides": [1, 1, 1, 1], "padding": "SAME", "dilations": [2, 2]}),
             ({"strides": [1, 1, 1, 1], "padding": "VALID", "dilations": [2, 1]})]


@pytest.mark.parametrize("kwargs", DEPTHWISE)
def test_depthwise_and_separable_conv2d_match_tensorflow(kwargs):
    x = RNG.standard_normal((2, 6, 7, 3)).astype(np.float32)
    dw = RNG.standard_normal((3, 2, 3, 2)).astype(np.float32)
    pw = RNG.standard_normal((1, 1, 6, 4)).astype(np.float32)
    want = _tf_depthwise(x, dw, **kwargs)
    got = FFTF.nn.depthwise_conv2d(x, dw, **kwargs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    want = tf.nn.conv2d(want, pw, 1, "VALID").numpy()  # separable_conv2d: the depthwise, then the 1x1 pointwise
    np.testing.assert_allclose(FFTF.nn.separable_conv2d(x, dw, pw, **kwargs), want, rtol=1e-5, atol=1e-5)


def _tf_depthwise(x, dw, strides, padding, dilations=None):
    """TensorFlow's depthwise convolution, as tf.nn.conv2d with a block-diagonal kernel where its own
    kernel refuses unequal strides (TensorFlow's CPU depthwise without oneDNN: hosts without AVX-512)."""
    try:
        return tf.nn.depthwise_conv2d(x, dw, strides, padding, dilations=dilations).numpy()
    except (tf.errors.UnimplementedError, tf.errors.InvalidArgumentError):
        kh, kw, c, m = dw.shape
        full = np.zeros((kh, kw, c, c * m), np.float32)
        for i in range(c):
            full[:, :, i, i * m:(i + 1) * m] = dw[:, :, i, :]
        return tf.nn.conv2d(x, full, strides, padding, dilations=dilations).numpy()


def test_depthwise_strides_and_dilations_together_are_refused():
    """TensorFlow only warns when both exceed 1, and computes through space-to-batch with its own sizes."""
    dw = np.ones((3, 3, 3, 2), np.float32)
    with pytest.warns(UserWarning):
        tf.nn.depthwise_conv2d(X, dw, [1, 2, 2, 1], "SAME", dilations=[2, 2])
    with pytest.raises(RawTensorFlowError, match="both above 1"):
        FFTF.nn.depthwise_conv2d(X, dw, [1, 2, 2, 1], "SAME", dilations=[2, 2])


@pytest.mark.parametrize("path", ["conv2d_transpose", "depthwise_conv2d"])
def test_gradients_match_tensorflow(path):
    f = RNG.standard_normal((3, 3, 5, 3) if path == "conv2d_transpose" else (3, 3, 3, 2)).astype(np.float32)

    def call(t, x, w):
        if path == "conv2d_transpose":
            return t.nn.conv2d_transpose(x, w, [2, 6, 8, 5], [1, 2, 2, 1], "SAME")
        return t.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[2, 2])

    ox, ow, tx, tw = keras.Variable(X), keras.Variable(f), tf.Variable(X), tf.Variable(f)
    with FFTF.GradientTape() as tape:  # the input a computed tensor: a Variable passed directly as the input
        loss = FFTF.reduce_sum(FFTF.square(call(FFTF, ox * 1.5, ow)))  # of these ops gets no gradient here yet
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_sum(tf.square(call(tf, tx * 1.5, tw)))
    for g, w in zip(tape.gradient(loss, [ox, ow]), ttape.gradient(tloss, [tx, tw]), strict=True):
        np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-4, atol=1e-4)


def test_a_layer_calling_them_predicts_as_tf_keras(request):
    request.addfinalizer(config.reset)
    f = RNG.standard_normal((3, 3, 4, 3)).astype(np.float32)
    dw = RNG.standard_normal((3, 3, 4, 2)).astype(np.float32)

    def model(k, t):
        class Up(k.layers.Layer):
            def build(self, input_shape):
                self.f = self.add_weight(shape=f.shape, name="f")
                self.dw = self.add_weight(shape=dw.shape, name="dw")

            def call(self, x):
                y = t.nn.conv2d_transpose(x, self.f, [t.shape(x)[0], 7, 8, 4], [1, 2, 2, 1], "SAME")
                return t.nn.depthwise_conv2d(y, self.dw, [1, 1, 1, 1], "VALID")

        inp = k.Input((4, 4, 3))
        m = k.Model(inp, Up()(inp))
        m.set_weights([f, dw])
        return m

    x = RNG.standard_normal((4, 4, 4, 3)).astype(np.float32)
    want = model(tf.keras, tf).predict(x, verbose=0)
    config.set(data_parallel_degree=1)
    np.testing.assert_allclose(model(keras, FFTF).predict(x, verbose=0), want, rtol=1e-5, atol=1e-5)
