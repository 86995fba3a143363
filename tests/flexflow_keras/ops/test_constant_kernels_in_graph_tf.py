"""keras.ops convolutions of a symbolic input with a constant kernel (a NumPy array or an eager tensor), as
Keras 3 takes them: the constant is a graph constant, so the model builds, predicts and trains its other
weights as tf.keras does (the graph node read ``.spec`` of the array and failed)."""

import numpy as np
import pytest

import flexflow_keras as fk

_RNG = np.random.default_rng(11)
_DEPTH = (_RNG.normal(size=(3, 3, 4, 1)) / 3).astype(np.float32)
_TRANS = (_RNG.normal(size=(2, 2, 3, 4)) / 2).astype(np.float32)
_SEP_D = (_RNG.normal(size=(3, 3, 3, 2)) / 3).astype(np.float32)
_SEP_P = (_RNG.normal(size=(1, 1, 6, 5)) / 2.5).astype(np.float32)
_CONV = (_RNG.normal(size=(3, 3, 5, 2)) / 6).astype(np.float32)
_CONV1 = (_RNG.normal(size=(2, 2, 4)) / 2).astype(np.float32)


def _model(K):
    inp = K.Input((6, 6, 2))
    h = K.layers.Conv2D(4, 3, padding="same", name="first")(inp)
    h = K.ops.depthwise_conv(h, _DEPTH, padding="same")
    # in a Lambda: Keras 3.15's ConvTranspose operation passes padding and output_padding to the backend in
    # each other's places when a functional model runs it, so tf.keras could not be the reference otherwise
    h = K.layers.Lambda(lambda t: K.ops.conv_transpose(t, _TRANS, strides=2, padding="same"))(h)
    h = K.ops.separable_conv(h, _SEP_D, _SEP_P, strides=2, padding="valid")
    h = K.ops.conv(h, K.ops.convert_to_tensor(_CONV), padding="same")
    h = K.ops.conv(K.ops.reshape(h, (-1, 25, 2)), _CONV1)
    out = K.layers.Dense(3, name="last")(K.layers.Flatten()(h))
    return K.Model(inp, out)


def test_constant_kernels_build_predict_and_train_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    rng = np.random.default_rng(2)
    x = rng.normal(size=(8, 6, 6, 2)).astype(np.float32)
    y = rng.normal(size=(8, 3)).astype(np.float32)
    ref, ours = _model(keras), _model(fk)
    assert len(ours.trainable_weights) == len(ref.trainable_weights) == 4
    ours.set_weights(ref.get_weights())
    np.testing.assert_allclose(ours.predict(x, verbose=0), ref.predict(x, verbose=0), rtol=1e-5, atol=1e-5)
    for m, K in ((ref, keras), (ours, fk)):
        m.compile(K.optimizers.SGD(0.01), "mse")
        m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for got, want in zip(ours.get_weights(), ref.get_weights(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours.predict(x, verbose=0), ref.predict(x, verbose=0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernel_of", [np.asarray, fk.ops.convert_to_tensor])
def test_conv_transpose_of_a_symbolic_input_with_a_constant_kernel_predicts_as_eagerly(kernel_of):
    x = np.random.default_rng(4).normal(size=(3, 5, 5, 4)).astype(np.float32)
    inp = fk.Input((5, 5, 4))
    model = fk.Model(inp, fk.ops.conv_transpose(inp, kernel_of(_TRANS), strides=2, padding="same"))
    want = np.asarray(fk.ops.conv_transpose(x, _TRANS, strides=2, padding="same"))
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)
    assert model.weights == []
