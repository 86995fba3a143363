"""An activity regularizer that mixes the samples of its batch (keras.io PointNet's OrthogonalRegularizer:
``tf.tensordot(x, x, axes=(2, 2))`` of the (batch, f, f) transform, a (batch, f, batch, f) tensor reshaped to
(-1, f, f)) is computed on the whole batch at run time (ops/whole_batch.py): fit's losses, the trained
weights and evaluate equal tf.keras 3.15's, at one and two processors and with a short last batch. The same
tensordot in a layer's call() stays a CrossBatchError."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias, ops  # noqa: E402
from flexflow_keras.errors import CrossBatchError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
RNG = np.random.default_rng(0)
X = RNG.standard_normal((10, 6, 3)).astype(np.float32)
Y = RNG.integers(0, 3, 10)


def _orthogonal(k, t):
    class OrthogonalRegularizer(k.regularizers.Regularizer):
        def __init__(self, num_features, l2reg=0.001):
            self.num_features, self.l2reg, self.eye = num_features, l2reg, t.eye(num_features)

        def __call__(self, x):
            x = t.reshape(x, (-1, self.num_features, self.num_features))
            xxt = t.tensordot(x, x, axes=(2, 2))
            xxt = t.reshape(xxt, (-1, self.num_features, self.num_features))
            return t.reduce_sum(self.l2reg * t.square(xxt - self.eye))

    return OrthogonalRegularizer


def _tnet_model(k, reg):
    """PointNet's t-net on 3 features, reduced: the transform's Dense carries the regularizer."""
    inp = k.Input((6, 3))
    x = k.layers.Conv1D(8, 1, activation="relu")(inp)
    x = k.layers.GlobalMaxPooling1D()(x)
    x = k.layers.Dense(9, bias_initializer=k.initializers.Constant(np.eye(3).flatten()), activity_regularizer=reg)(x)
    x = k.layers.Dot(axes=(2, 1))([inp, k.layers.Reshape((3, 3))(x)])
    out = k.layers.Dense(3, activation="softmax")(k.layers.GlobalMaxPooling1D()(x))
    return k.Model(inp, out)


def _train(k, model, batch):
    model.compile(optimizer=k.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    hist = model.fit(X, Y, batch_size=batch, epochs=1, shuffle=False, verbose=0).history["loss"]
    return hist, model.evaluate(X, Y, batch_size=batch, verbose=0), model.get_weights()


@pytest.mark.parametrize(("degree", "batch"), [(1, 4), (2, 5)])
def test_pointnet_orthogonal_regularizer_trains_as_tf_keras(request, degree, batch):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=degree)
    theirs = _tnet_model(tf.keras, _orthogonal(tf.keras, tf)(3, l2reg=0.05))
    ours = _tnet_model(keras, _orthogonal(keras, FFTF)(3, l2reg=0.05))
    start = [(RNG.standard_normal(w.shape) * 0.3).astype(np.float32) for w in theirs.get_weights()]
    theirs.set_weights(start)
    ours.set_weights(start)
    want, got = _train(tf.keras, theirs, batch), _train(keras, ours, batch)
    np.testing.assert_allclose(got[0], want[0], rtol=2e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=2e-5)
    for a, b in zip(got[2], want[2], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_keras_ops_spelling_and_the_penalty_value():
    def reg(x):  # the same penalty in keras.ops, a function rather than a Regularizer
        x = ops.reshape(x, (-1, 2, 2))
        return 0.5 * ops.sum(ops.square(ops.reshape(ops.einsum("aij,bkj->aibk", x, x), (-1, 2, 2)) - ops.eye(2)))

    inp = keras.Input((4,))
    layer = keras.layers.Dense(4, activity_regularizer=reg)
    model = keras.Model(inp, layer(inp))
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    kernel, bias = model.get_weights()
    h = (x @ kernel + bias).reshape(6, 2, 2)
    want = 0.5 * np.sum((np.einsum("aij,bkj->aibk", h, h).reshape(-1, 2, 2) - np.eye(2)) ** 2) / 6
    model.compile(optimizer="sgd", loss="mse")
    np.testing.assert_allclose(model.evaluate(x, np.zeros((6, 4), np.float32), batch_size=6, verbose=0),
                               np.mean((x @ kernel + bias) ** 2) + want, rtol=1e-5)


def test_the_same_op_in_a_layers_call_stays_an_error():
    class Gram(keras.layers.Layer):
        def call(self, x):
            return FFTF.tensordot(x, x, axes=(2, 2))

    with pytest.raises(CrossBatchError, match="batch subscript 'a' must stay the first output subscript.*only "
                                              "computed inside an activity regularizer"):
        Gram()(keras.Input((3, 3)))


def _gram(k, o):
    def reg(x):  # a (batch, batch) Gram matrix, reshaped over the batch: recorded without an error, sized wrong
        return 0.01 * o.sum(o.square(o.reshape(o.matmul(x, o.transpose(x)), (-1, 2, 2)) - o.eye(2)))

    inp = k.Input((3,))
    return k.Model(inp, k.layers.Dense(1)(k.layers.Dense(4, activity_regularizer=reg)(inp)))


def test_a_gram_matrix_over_the_batch_in_a_regularizer_trains_as_tf_keras():
    import keras as tk

    x, y = RNG.standard_normal((16, 3)).astype(np.float32), RNG.standard_normal((16, 1)).astype(np.float32)
    theirs, ours = _gram(tk, tk.ops), _gram(keras, ops)
    ours.set_weights(theirs.get_weights())
    for m in (theirs, ours):
        m.compile(optimizer=m is ours and keras.optimizers.SGD(0.01) or tk.optimizers.SGD(0.01), loss="mse")
    want = theirs.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    got = ours.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-5)  # before: other numbers, silently (B rows of B*B counted)


def test_a_reshape_over_two_batch_dims_elsewhere_is_refused_not_miscounted():
    inp = keras.Input((3,))
    out = keras.layers.Lambda(lambda t: ops.reshape(ops.matmul(t, ops.transpose(t)), (-1, 2, 2)))(inp)
    with pytest.raises(CrossBatchError, match=r"input \(8, 8\) holds 64 elements and its output \(8, 2, 2\) 32"):
        keras.Model(inp, out).predict(np.ones((8, 3), np.float32), batch_size=8, verbose=0)
