"""A compute_loss (or traced train_step/test_step) override with per-sample weights.

Keras 3 passes the batch's sample weights to the override and takes its result as the loss
(``super().compute_loss(x, y, y_pred, sample_weight)`` gives mean(w_i * l_i); on this data Keras 3.15's
evaluate reports 6.70599). flexflow_keras once traced the override with sample_weight=None and weighted its
scalar again (mean(l) * mean(w), 6.16545), then refused such weights; the override now gets them as a
symbolic input of the step graph, so such a model computes what the compiled loss with sample_weight=
computes.
"""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config

rng = np.random.default_rng(0)
X = rng.normal(size=(64, 4)).astype("float32")
Y = rng.normal(size=(64, 1)).astype("float32")
W = rng.uniform(0, 2, size=(64,)).astype("float32")
PER_SAMPLE = ((X.sum(1, keepdims=True) - Y) ** 2)[:, 0]


class SuperLoss(keras.Model):
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return super().compute_loss(x, y, y_pred, sample_weight)


class OwnStep(keras.Model):
    def train_step(self, data):
        return super().train_step(data)

    def test_step(self, data):
        return super().test_step(data)


class Seen(keras.Model):
    """Records what sample_weight its compute_loss is handed."""

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        self.seen = sample_weight
        return super().compute_loss(x, y, y_pred, sample_weight)


def _model(cls=SuperLoss):
    inp = keras.Input((4,))
    out = keras.layers.Dense(1, kernel_initializer="ones", bias_initializer="zeros")(inp)
    model = cls(inp, out, name="weighted_override")
    model.compile(optimizer="sgd", loss="mse")
    return model


@pytest.fixture(params=[1, 2], ids=["dp1", "dp2"])
def degree(request):
    config.set(data_parallel_degree=request.param)
    yield request.param
    config.set(data_parallel_degree=1)


def test_evaluate_with_weights_is_the_weighted_mean(degree):
    got = _model().evaluate(X, Y, sample_weight=W, batch_size=32, verbose=0)
    assert got == pytest.approx(float((W * PER_SAMPLE).mean()), rel=1e-5)  # Keras 3.15: 6.70599
    assert _model(OwnStep).evaluate(X, Y, sample_weight=W, batch_size=32, verbose=0) == pytest.approx(got, rel=1e-6)


def test_fit_with_sample_weight_or_class_weight_trains_as_the_compiled_loss(degree):
    for kwargs in ({"sample_weight": W}, {"class_weight": {0: 1.0, 1: 3.0}}):
        labels = Y if "sample_weight" in kwargs else (Y > 0).astype("float32")
        runs = []
        for cls in (SuperLoss, keras.Model, OwnStep):
            model = _model(cls)
            h = model.fit(X, labels, batch_size=16, epochs=2, shuffle=False, verbose=0, **kwargs)
            runs.append((h.history["loss"], model.get_weights()))
        for losses, weights in runs[1:]:
            np.testing.assert_allclose(losses, runs[0][0], rtol=1e-5)
            for a, b in zip(weights, runs[0][1], strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_the_override_gets_none_without_weights_and_a_tensor_with_them():
    model = _model(Seen)
    model.evaluate(X, Y, batch_size=32, verbose=0)
    assert model.seen is None
    model.evaluate(X, Y, sample_weight=W, batch_size=32, verbose=0)
    assert tuple(model.seen.shape) == (None,)


def test_per_token_weights_weigh_each_token():
    x = rng.normal(size=(8, 5, 3)).astype("float32")
    y = rng.normal(size=(8, 5, 1)).astype("float32")
    w = rng.uniform(0, 2, size=(8, 5)).astype("float32")
    inp = keras.Input((5, 3))
    model = SuperLoss(inp, keras.layers.Dense(1, kernel_initializer="ones")(inp), name="tokens")
    model.compile(optimizer="sgd", loss="mse")
    got = model.evaluate(x, y, sample_weight=w, batch_size=4, verbose=0)
    per_token = (x.sum(-1) - y[..., 0]) ** 2
    assert got == pytest.approx(float((w * per_token).mean()), rel=1e-5)


def test_a_dataset_yielding_weights_is_weighted():
    def batches():
        for i in range(0, 64, 16):
            yield X[i:i + 16], Y[i:i + 16], W[i:i + 16]

    got = _model().evaluate(batches(), verbose=0)
    assert got == pytest.approx(float((W * PER_SAMPLE).mean()), rel=1e-5)
    a, b = _model(), _model(keras.Model)
    a.fit(batches(), epochs=1, verbose=0)
    b.fit(batches(), epochs=1, verbose=0)
    for u, v in zip(a.get_weights(), b.get_weights(), strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)


def test_weights_after_an_unweighted_first_batch_are_refused_naming_the_model():
    def batches():
        yield X[:16], Y[:16]
        yield X[16:32], Y[16:32], W[16:32]

    with pytest.raises(ValueError, match=r"Model 'weighted_override' overrides compute_loss\(\).*first batch"):
        _model().fit(batches(), epochs=1, verbose=0)


def test_unit_weights_and_compiled_loss_keep_their_values(degree):
    unweighted = float(PER_SAMPLE.mean())
    ones = _model().evaluate(X, Y, sample_weight=np.ones(64, "float32"), batch_size=32, verbose=0)
    assert ones == pytest.approx(unweighted, rel=1e-5)
    plain = _model(keras.Model).evaluate(X, Y, sample_weight=W, batch_size=32, verbose=0)
    assert plain == pytest.approx(float((W * PER_SAMPLE).mean()), rel=1e-5)  # Keras 3.15: 6.70599
