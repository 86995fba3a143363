"""MAPE, MSLE, KL divergence and cosine similarity: Keras 2 short names, eager values against float64
formulas and tf.keras, and training through them (their symbolic form composes ops with backward)."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import losses

RNG = np.random.default_rng(1)
T = RNG.random((6, 4)).astype(np.float32) + 0.05
P = RNG.random((6, 4)).astype(np.float32) + 0.05
EPS = 1e-7


def test_short_names_resolve_to_the_classes():
    assert losses.mse is losses.mean_squared_error and losses.mae is losses.mean_absolute_error
    for name, cls in (("mape", losses.MeanAbsolutePercentageError), ("msle", losses.MeanSquaredLogarithmicError),
                      ("kld", losses.KLDivergence), ("kullback_leibler_divergence", losses.KLDivergence),
                      ("cosine", losses.CosineSimilarity), ("cosine_similarity", losses.CosineSimilarity)):
        assert isinstance(losses.get(name), cls)
    assert isinstance(losses.get(losses.mape), losses.MeanAbsolutePercentageError)
    again = losses.deserialize(losses.serialize(losses.CosineSimilarity(name="cos")))
    assert isinstance(again, losses.CosineSimilarity) and again.name == "cos"


def test_eager_values_match_the_formulas():
    t, p = T.astype(np.float64), P.astype(np.float64)
    np.testing.assert_allclose(losses.mape(T, P), 100 * np.mean(np.abs(t - p) / t, axis=-1), rtol=1e-5)
    np.testing.assert_allclose(losses.msle(T, P), np.mean((np.log1p(p) - np.log1p(t)) ** 2, axis=-1), rtol=1e-5)
    np.testing.assert_allclose(losses.kld(np.clip(T, 0, 1), np.clip(P, 0, 1)),
                               np.sum(np.clip(t, EPS, 1) * np.log(np.clip(t, EPS, 1) / np.clip(p, EPS, 1)), -1),
                               rtol=1e-5)
    cos = np.sum(t * p, -1) / (np.linalg.norm(t, axis=-1) * np.linalg.norm(p, axis=-1))
    np.testing.assert_allclose(losses.cosine(T, P), -cos, rtol=1e-5)
    assert losses.MeanAbsolutePercentageError()(T, P) == pytest.approx(float(np.mean(losses.mape(T, P))), rel=1e-5)


@pytest.mark.parametrize("loss", ["mape", "msle", "kld", "cosine"])
def test_training_through_the_loss_lowers_it(loss):
    x = RNG.random((64, 5)).astype(np.float32)
    y = np.abs(x @ RNG.random((5, 3)).astype(np.float32)) + 0.1
    if loss == "kld":
        y = y / y.sum(-1, keepdims=True)
    act = "softmax" if loss == "kld" else "softplus"
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3, activation=act)])
    model.compile(keras.optimizers.Adam(0.05), loss)
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before


@pytest.mark.tf
def test_values_match_tf_keras():
    tf = pytest.importorskip("tensorflow")
    tl = tf.keras.losses
    t01, p01 = np.clip(T, 0, 1), np.clip(P, 0, 1)
    for ours, theirs, a, b in ((losses.MeanAbsolutePercentageError(), tl.MeanAbsolutePercentageError(), T, P),
                               (losses.MeanSquaredLogarithmicError(), tl.MeanSquaredLogarithmicError(), T, P),
                               (losses.KLDivergence(), tl.KLDivergence(), t01, p01),
                               (losses.CosineSimilarity(), tl.CosineSimilarity(), T, P)):
        assert float(ours(a, b)) == pytest.approx(float(theirs(a, b)), rel=1e-5)
