"""Losses whose labels are computed by the model get their gradient through the labels too, as Keras 3 on
TensorFlow: under a GradientTape (keras.io's sample-size recipe fits a curve with ``mse(y_pred, mean_acc)``,
the prediction in the labels' place) and in a traced fit (a consistency loss ``add_loss(mse(a, b))`` trains
both branches). The fused loss op differentiated its predictions only: the gradient was None, or silently
missing from the branch in the labels' place. Labels that are data keep the fused op."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tf_keras = pytest.importorskip("tensorflow.keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras.ops.tape import GradientTape  # noqa: E402

pytestmark = pytest.mark.tf

r = np.random.RandomState(0)
T0 = r.rand(4, 3).astype(np.float32)
P0 = (r.rand(4, 3) * 0.8 + 0.1).astype(np.float32)

LOSSES = {
    "mse": lambda L: L.MeanSquaredError(),
    "mae": lambda L: L.MeanAbsoluteError(),
    "bce": lambda L: L.BinaryCrossentropy(),
    "bce_logits_smoothed": lambda L: L.BinaryCrossentropy(from_logits=True, label_smoothing=0.2),
    "cce": lambda L: L.CategoricalCrossentropy(),
    "cce_logits": lambda L: L.CategoricalCrossentropy(from_logits=True),
    "cce_logits_smoothed": lambda L: L.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1),
    "function_mse": lambda L: L.mse,
    "function_bce": lambda L: L.binary_crossentropy,
}


def _grads(lib, tape_cls, name, t0=T0, p0=P0):
    a, b = lib.Variable(t0), lib.Variable(p0)
    with tape_cls() as tape:
        value = lib.ops.sum(LOSSES[name](lib.losses)(a * 1.0, b * 1.0))
    ga, gb = tape.gradient(value, [a, b])
    return float(np.asarray(value)), ga, gb


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_tape_differentiates_the_labels_as_tensorflow(name):
    v, ga, gb = _grads(ff, GradientTape, name)
    rv, rga, rgb = _grads(tf_keras, tf.GradientTape, name)
    assert ga is not None, "no gradient reached the labels"
    np.testing.assert_allclose(v, rv, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ga), rga.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(gb), rgb.numpy(), rtol=1e-5, atol=1e-7)


def test_label_with_a_trailing_one_is_aligned_as_keras():
    v, ga, gb = _grads(ff, GradientTape, "mse", T0[:, 0], P0[:, :1])
    rv, rga, rgb = _grads(tf_keras, tf.GradientTape, "mse", T0[:, 0], P0[:, :1])
    np.testing.assert_allclose(v, rv, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ga), rga.numpy(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(gb), rgb.numpy(), rtol=1e-5)


def _curve_fit(lib, tape_cls, steps=200):
    """keras.io sample_size_estimate's fit_and_predict, shortened: mse(prediction, data) under a tape."""
    x = [165, 330, 825, 1651]
    mean_acc = np.array([0.807, 0.8746, 0.9003, 0.9057], np.float32)
    mse = lib.losses.MeanSquaredError()
    a, b = lib.Variable(0.0), lib.Variable(0.0)
    for _ in range(steps):
        with tape_cls() as tape:
            cost = mse(a * x**b, mean_acc)
        ga, gb = tape.gradient(cost, [a, b])
        a.assign_sub(ga * 0.01)
        b.assign_sub(gb * 0.01)
    return float(a.numpy()), float(b.numpy())


def test_curve_fit_with_the_prediction_in_the_labels_place():
    got = _curve_fit(ff, GradientTape)
    want = _curve_fit(tf_keras, tf.GradientTape)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def _consistency_fit(lib):
    class Consistency(lib.layers.Layer):
        def call(self, a, b):
            self.add_loss(lib.ops.mean(lib.losses.mse(a, b)))
            return b

    inp = lib.Input((4,))
    a = lib.layers.Dense(3)(inp)
    b = lib.layers.Dense(3)(inp)
    model = lib.Model(inp, Consistency()(a, b))
    rs = np.random.RandomState(1)
    model.set_weights([rs.randn(*w.shape).astype(np.float32) for w in model.get_weights()])
    model.compile(optimizer=lib.optimizers.SGD(0.1))
    x = rs.randn(16, 4).astype(np.float32)
    history = model.fit(x, epochs=2, batch_size=8, verbose=0, shuffle=False)
    return history.history["loss"], model.get_weights()


def test_fit_trains_the_branch_in_the_labels_place():
    losses, weights = _consistency_fit(ff)
    want_losses, want_weights = _consistency_fit(tf_keras)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for w, ref in zip(weights, want_weights, strict=True):
        np.testing.assert_allclose(w, ref, rtol=1e-5, atol=1e-6)
