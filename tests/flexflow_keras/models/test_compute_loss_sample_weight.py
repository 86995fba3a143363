"""A compute_loss (or traced train_step/test_step) override with per-sample weights.

Keras 3 passes the batch's sample weights to the override and takes its result as the loss
(``super().compute_loss(x, y, y_pred, sample_weight)`` gives mean(w_i * l_i); on this data Keras 3.15's
evaluate reports 6.70599). flexflow_keras traced the override with sample_weight=None and weighted its
scalar again, reporting mean(l) * mean(w) (6.16545); it now refuses weights other than 1 for such a model.
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


def test_evaluate_with_weights_is_refused_naming_the_model(degree):
    with pytest.raises(ValueError, match=r"Model 'weighted_override' overrides compute_loss\(\).*sample_weight"):
        _model().evaluate(X, Y, sample_weight=W, batch_size=32, verbose=0)


def test_fit_with_sample_weight_or_class_weight_is_refused(degree):
    with pytest.raises(ValueError, match="compute the weighting inside compute_loss"):
        _model().fit(X, Y, sample_weight=W, batch_size=32, epochs=1, verbose=0)
    labels = (Y > 0).astype("float32")
    with pytest.raises(ValueError, match="weighted_override"):
        _model().fit(X, labels, class_weight={0: 1.0, 1: 3.0}, batch_size=32, epochs=1, verbose=0)


def test_per_token_weights_are_refused_before_the_loader():
    x = rng.normal(size=(8, 5, 3)).astype("float32")
    y = rng.normal(size=(8, 5, 1)).astype("float32")
    inp = keras.Input((5, 3))
    model = SuperLoss(inp, keras.layers.Dense(1)(inp), name="tokens")
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="Model 'tokens' overrides compute_loss"):
        model.fit(x, y, sample_weight=rng.uniform(0, 2, size=(8, 5)), batch_size=4, epochs=1, verbose=0)


def test_a_dataset_yielding_weights_is_refused():
    def batches():
        for i in range(0, 64, 16):
            yield X[i:i + 16], Y[i:i + 16], W[i:i + 16]

    with pytest.raises(ValueError, match="weighted_override"):
        _model().fit(batches(), epochs=1, verbose=0)
    with pytest.raises(ValueError, match="weighted_override"):
        _model().evaluate(batches(), verbose=0)


def test_a_traced_train_step_with_weights_is_refused():
    with pytest.raises(ValueError, match=r"overrides train_step\(\)/test_step\(\)"):
        _model(OwnStep).evaluate(X, Y, sample_weight=W, batch_size=32, verbose=0)


def test_unit_weights_and_compiled_loss_keep_their_values(degree):
    unweighted = float(PER_SAMPLE.mean())
    ones = _model().evaluate(X, Y, sample_weight=np.ones(64, "float32"), batch_size=32, verbose=0)
    assert ones == pytest.approx(unweighted, rel=1e-5)
    plain = _model(keras.Model).evaluate(X, Y, sample_weight=W, batch_size=32, verbose=0)
    assert plain == pytest.approx(float((W * PER_SAMPLE).mean()), rel=1e-5)  # Keras 3.15: 6.70599
