"""Global max poolings share the gradient of a maximum reached at several positions equally among them,
as Keras 3 does (its layers call ops.max: TensorFlow's reduce_max gradient), where our global_pool2d kernels
gave it all to the first. Ties are the rule after an Embedding: a token repeated in a sequence gives equal
rows, so GlobalMaxPooling1D over a text model (Deep Learning with Python, 2nd ed., ch. 11's Transformer)
saw the same summed table gradient but other per-lookup rows, and RMSprop's per-lookup moments (see
optimizers/base.py's sparse_moment_power) moved the embedding differently from tf.keras 3.15's."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")

X1 = np.array([[[1.0, 2.0, -1.0], [1.0, 0.5, -1.0], [0.0, 2.0, -1.0], [1.0, -3.0, -2.0]]], np.float32)
X2 = np.array([[[[3.0, 0.0], [3.0, 1.0]], [[1.0, 1.0], [3.0, 1.0]], [[2.0, 1.0], [0.0, -4.0]]]], np.float32)


def _input_grad(T, layer, x, weights):
    x = T.convert_to_tensor(x)
    with T.GradientTape() as tape:
        tape.watch(x)
        y = T.reduce_sum(layer(x) * T.constant(weights))
    return np.asarray(tape.gradient(y, x))


@pytest.mark.parametrize("name, x, kwargs", [
    ("GlobalMaxPooling1D", X1, {}),
    ("GlobalMaxPooling1D", X1.transpose(0, 2, 1), {"data_format": "channels_first"}),
    ("GlobalMaxPooling2D", X2, {}),
    ("GlobalMaxPooling2D", X2, {"keepdims": True}),
])
def test_tied_maxima_share_the_gradient_as_tensorflow(name, x, kwargs):
    c = x.shape[1] if kwargs.get("data_format") == "channels_first" else x.shape[-1]
    weights = np.arange(1.0, c + 1, dtype=np.float32)
    if kwargs.get("keepdims"):
        weights = weights.reshape(1, 1, c)
    want = _input_grad(tf, getattr(tk.layers, name)(**kwargs), x, weights)
    got = _input_grad(FFTF, getattr(ff.layers, name)(**kwargs), x, weights)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.count_nonzero(want) > x.shape[0] * c  # some maximum is tied: its gradient reaches several inputs


def _embedding_model(K):
    inp = K.Input((6,), dtype="int32")
    h = K.layers.Embedding(7, 4)(inp)
    return K.Model(inp, K.layers.Dense(1, activation="sigmoid")(K.layers.GlobalMaxPooling1D()(h)))


@pytest.mark.parametrize("optimizer", ["rmsprop", "sgd"])
def test_embedding_then_global_max_pooling_trains_as_tf_keras(optimizer):
    """Repeated tokens tie in the pooling; one compiled training step moves every weight as tf.keras 3.15."""
    ids = np.array([[1, 2, 1, 1, 0, 0], [3, 3, 3, 4, 5, 0], [6, 1, 6, 2, 6, 0]], np.int32)
    y = np.array([[1.0], [0.0], [1.0]], np.float32)
    tk.utils.set_random_seed(0)
    tm, fm = _embedding_model(tk), _embedding_model(ff)
    fm.set_weights(tm.get_weights())
    for m in (tm, fm):
        m.compile(optimizer=optimizer, loss="binary_crossentropy")
    for _ in range(2):
        tl, fl = tm.train_on_batch(ids, y), fm.train_on_batch(ids, y)
        np.testing.assert_allclose(fl, tl, rtol=1e-5)
    for a, b in zip(fm.get_weights(), tm.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name, shape", [("GlobalMaxPooling1D", (2, 6, 3)), ("GlobalMaxPooling2D", (2, 3, 2, 3)),
                                         ("GlobalMaxPooling3D", (2, 2, 2, 2, 3))])
def test_a_nan_maximum_and_its_gradients_are_nan_as_tensorflow(name, shape):
    """A NaN in a sample's channel: TensorFlow's reduce_max gives NaN and NaN gradients for every position
    of that channel, wherever the NaN lies (first, inside or last); ours kept a first-position NaN only."""
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    flat = x.reshape(shape[0], -1, shape[-1])
    flat[0, 0, 0] = np.nan  # the first position
    flat[1, 2, 1] = np.nan  # inside
    flat[1, -1, 2] = np.nan  # the last
    weights = np.arange(1.0, shape[-1] + 1, dtype=np.float32)
    want_y = np.asarray(getattr(tk.layers, name)()(x))
    got_y = np.asarray(getattr(ff.layers, name)()(x))
    np.testing.assert_array_equal(got_y, want_y)
    want = _input_grad(tf, getattr(tk.layers, name)(), x, weights)
    got = _input_grad(FFTF, getattr(ff.layers, name)(), x, weights)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.isnan(want).sum() == 3 * (x.size // (shape[0] * shape[-1]))
