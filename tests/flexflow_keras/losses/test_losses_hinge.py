"""Hinge, squared hinge and categorical hinge: NumPy values, the symbolic (ops) path used in training, and
parity with tf.keras."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import losses

RNG = np.random.default_rng(3)
P = RNG.normal(size=(6, 4)).astype(np.float32)
T01 = RNG.integers(0, 2, size=(6, 4)).astype(np.float32)
ONEHOT = np.eye(4, dtype=np.float32)[RNG.integers(0, 4, size=6)]


def test_binary_labels_are_mapped_to_plus_minus_one():
    t = 2.0 * T01 - 1.0
    want = np.mean(np.maximum(1.0 - t * P, 0.0), axis=-1)
    np.testing.assert_allclose(losses.hinge(T01, P), want, rtol=1e-6)
    np.testing.assert_allclose(losses.hinge(t, P), want, rtol=1e-6)  # already -1/1: unchanged
    np.testing.assert_allclose(losses.squared_hinge(T01, P), np.mean(np.maximum(1.0 - t * P, 0.0) ** 2, -1),
                               rtol=1e-6)


def test_categorical_hinge_values():
    pos = np.sum(ONEHOT * P, -1)
    neg = np.max((1.0 - ONEHOT) * P, -1)
    np.testing.assert_allclose(losses.categorical_hinge(ONEHOT, P), np.maximum(neg - pos + 1.0, 0.0), rtol=1e-6)


@pytest.mark.parametrize("name", ["hinge", "squared_hinge", "categorical_hinge"])
def test_names_functions_and_classes_resolve(name):
    by_name = losses.get(name)
    assert by_name.name == name
    assert type(losses.get(getattr(losses, name))) is type(by_name)


@pytest.mark.parametrize("loss", [losses.hinge, "squared_hinge", losses.CategoricalHinge()])
def test_training_through_the_loss_matches_evaluate_and_lowers_it(loss):
    x = RNG.random((64, 5)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[np.argmax(x[:, :3], -1)]
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3)])
    model.compile(keras.optimizers.Adam(0.05), loss)
    before = model.evaluate(x, y, verbose=0)
    fn = losses.get(loss)
    assert before == pytest.approx(float(np.mean(fn.fn(y, model.predict(x, verbose=0)))), rel=1e-4)
    model.fit(x, y, epochs=10, batch_size=16, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before


@pytest.mark.tf
def test_values_match_tf_keras():
    tf = pytest.importorskip("tensorflow")
    tl = tf.keras.losses
    for ours, theirs, t in ((losses.Hinge(), tl.Hinge(), T01), (losses.Hinge(), tl.Hinge(), 2 * T01 - 1),
                            (losses.SquaredHinge(), tl.SquaredHinge(), T01),
                            (losses.CategoricalHinge(), tl.CategoricalHinge(), ONEHOT)):
        assert float(ours(t, P)) == pytest.approx(float(theirs(t, P)), rel=1e-5)
