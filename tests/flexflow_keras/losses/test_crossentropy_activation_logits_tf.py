"""Crossentropies of a softmax or sigmoid output inside a training step, against tf.keras 3.15: Keras'
TensorFlow backend computes them from the activation's input (`_keras_logits`) even when the loss says
``from_logits=True`` (it warns), also when the crossentropy is called inside a custom Loss's call()
(keras.io's NER example: a softmax model, ``SparseCategoricalCrossentropy(from_logits=True)`` inside a
masked loss). Eagerly there is no such rewrite, in TensorFlow or here."""

import numpy as np
import pytest

pytest.importorskip("tensorflow")
tf_keras = pytest.importorskip("tensorflow.keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

r = np.random.RandomState(0)
X = r.randn(48, 6, 5).astype(np.float32)
Y = r.randint(0, 4, (48, 6)).astype(np.int64)
Y[:, 4:] = 0  # padding, masked out by the custom loss


def _model(lib, act):
    return lib.Sequential([lib.Input((6, 5)), lib.layers.Dense(8, activation="tanh"),
                           lib.layers.Dense(4, activation=act)])


def _masked_loss(lib, kind):
    class MaskedLoss(lib.losses.Loss):
        def call(self, y_true, y_pred):
            if kind == "sparse":
                fn = lib.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                              reduction=lib.losses.Reduction.NONE)
                loss = fn(y_true, y_pred)
            elif kind == "categorical":
                fn = lib.losses.CategoricalCrossentropy(from_logits=False, reduction="none")
                loss = fn(lib.ops.one_hot(y_true, 4), y_pred)
            else:  # element-wise binary crossentropy of the one-hot labels, from_logits=True
                loss = lib.ops.mean(lib.ops.binary_crossentropy(lib.ops.one_hot(y_true, 4), y_pred,
                                                                from_logits=True), axis=-1)
            mask = lib.ops.cast(y_true > 0, "float32")
            return lib.ops.sum(loss * mask) / lib.ops.sum(mask)
    return MaskedLoss()


def _train(lib, act, loss, weights):
    model = _model(lib, act)
    model.set_weights(weights)
    model.compile(lib.optimizers.Adam(1e-2), loss=loss)
    before = model.evaluate(X, Y, batch_size=16, verbose=0)
    hist = model.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0).history["loss"]
    return before, hist, model.get_weights()


@pytest.mark.parametrize("act, kind", [("softmax", "sparse"), ("sigmoid", "sparse"), ("sigmoid", "categorical"),
                                       ("sigmoid", "binary"), ("softmax", "binary")])
def test_custom_loss_of_an_activation_trains_on_its_logits_as_tf_keras(act, kind):
    theirs = _model(tf_keras, act)
    weights = [(np.random.RandomState(1).randn(*w.shape) * 0.5).astype(np.float32) for w in theirs.get_weights()]
    b1, h1, w1 = _train(ff, act, _masked_loss(ff, kind), weights)
    b2, h2, w2 = _train(tf_keras, act, _masked_loss(tf_keras, kind), weights)
    np.testing.assert_allclose(b1, b2, rtol=1e-5)
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    for a, b in zip(w1, w2, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_compiled_from_logits_true_on_a_softmax_output_as_tf_keras():
    theirs = _model(tf_keras, "softmax")
    weights = [(np.random.RandomState(2).randn(*w.shape) * 0.5).astype(np.float32) for w in theirs.get_weights()]
    b1, h1, _ = _train(ff, "softmax", ff.losses.SparseCategoricalCrossentropy(from_logits=True), weights)
    b2, h2, _ = _train(tf_keras, "softmax", tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True), weights)
    np.testing.assert_allclose(b1, b2, rtol=1e-5)
    np.testing.assert_allclose(h1, h2, rtol=1e-5)


def test_eager_call_keeps_the_probabilities_as_tf_keras():
    p = np.asarray(ff.activations.softmax(X[:2, 0]))
    ours = ff.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")(Y[:2, 0], p)
    theirs = tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")(Y[:2, 0], p)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
