"""R2Score, the correlations and the best-at-a-constraint confusion metrics through compile(metrics=...)
-> evaluate/fit: the step's metric task computes per-shard statistics that add up to the whole batch's, so
one piece and two data-parallel pieces give the numbers of the eager metric on the model's predictions."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, metrics

RNG = np.random.default_rng(9)
X = RNG.standard_normal((40, 6)).astype(np.float32)
Y = np.stack([X[:, 0] + 0.5 * X[:, 1], X[:, 2] - X[:, 3], X[:, 4]], axis=1).astype(np.float32)
Y += 0.3 * RNG.standard_normal(Y.shape).astype(np.float32)
LABELS = (X[:, 0] + 0.5 * RNG.standard_normal(40) > 0).astype(np.float32)[:, None]
SW = RNG.uniform(0.2, 2.0, 40).astype(np.float32)
BATCH = 16  # 40 samples: batches of 16, 16 and 8


@pytest.fixture(params=[1, 2], ids=["one_piece", "two_pieces"])
def degree(request):
    """The metrics' step on one processor, or split over two data-parallel pieces."""
    split = {"only_data_parallel": True, "cpus": 2} if request.param == 2 else {}
    config.set(data_parallel_degree=request.param, **split)
    request.addfinalizer(config.reset)
    return request.param


def _eager(metric, y_true, y_pred, sample_weight=None):
    """The metric updated batch by batch, as evaluate's batches."""
    metric.reset_state()
    for lo in range(0, len(y_true), BATCH):
        w = None if sample_weight is None else sample_weight[lo:lo + BATCH]
        metric.update_state(y_true[lo:lo + BATCH], y_pred[lo:lo + BATCH], sample_weight=w)
    return np.asarray(metric.result())


def _regression_model():
    keras.utils.set_random_seed(2)
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(3)])


def _r2(y, p, w=None):
    """Plain float64 R², the mean over columns (an independent reference)."""
    w = np.ones(len(y)) if w is None else w.astype(np.float64)
    y, p = y.astype(np.float64), p.astype(np.float64)
    mean = (w[:, None] * y).sum(0) / w.sum()
    return float(np.mean(1 - (w[:, None] * (y - p) ** 2).sum(0) / (w[:, None] * (y - mean) ** 2).sum(0)))


def test_regression_metrics_through_evaluate(degree):
    model = _regression_model()
    batch_pearson = metrics.PearsonCorrelation(axis=0, name="batch_pearson")
    model.compile("sgd", "mse", metrics=["r2_score", metrics.R2Score(class_aggregation=None, name="r2_columns"),
                                         "pearson_correlation", metrics.ConcordanceCorrelation(), batch_pearson],
                  weighted_metrics=[metrics.R2Score(name="weighted_r2"), metrics.PearsonCorrelation(name="w_pc")])
    got = model.evaluate(X, Y, sample_weight=SW, batch_size=BATCH, verbose=0, return_dict=True)
    if degree == 2:
        assert "[2, 1]" in model._engine.strategy.describe()  # the metrics really ran on two pieces
    pred = model.predict(X, verbose=0)
    assert got["r2_score"] == pytest.approx(_r2(Y, pred), rel=1e-5)
    assert got["weighted_r2"] == pytest.approx(_r2(Y, pred, SW), rel=1e-5)
    np.testing.assert_allclose(got["r2_columns"], _eager(metrics.R2Score(class_aggregation=None), Y, pred),
                               rtol=1e-5)
    assert got["pearson_correlation"] == pytest.approx(float(_eager(metrics.PearsonCorrelation(), Y, pred)),
                                                       rel=1e-5)
    assert got["w_pc"] == pytest.approx(float(_eager(metrics.PearsonCorrelation(), Y, pred, SW)), rel=1e-5)
    assert got["concordance_correlation"] == pytest.approx(
        float(_eager(metrics.ConcordanceCorrelation(), Y, pred)), rel=1e-5)
    # one coefficient per column and batch, averaged: each batch whole even when split over two pieces
    per_batch = [np.corrcoef(Y[lo:lo + BATCH, j], pred[lo:lo + BATCH, j])[0, 1] for lo in (0, 16, 32)
                 for j in range(3)]
    assert got["batch_pearson"] == pytest.approx(float(np.mean(per_batch)), rel=1e-5)


def test_confusion_at_metrics_through_evaluate(degree):
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(1, activation="sigmoid")])
    chosen = [metrics.PrecisionAtRecall(0.6), metrics.RecallAtPrecision(0.5, num_thresholds=17),
              metrics.SensitivityAtSpecificity(0.5), metrics.SpecificityAtSensitivity(0.4, num_thresholds=1)]
    model.compile("sgd", "binary_crossentropy", metrics=chosen)
    got = model.evaluate(X, LABELS, batch_size=BATCH, verbose=0, return_dict=True)
    pred = model.predict(X, verbose=0)
    for m in chosen:
        fresh = type(m).from_config(m.get_config())
        assert got[m.name] == pytest.approx(float(_eager(fresh, LABELS, pred)), abs=1e-7), m.name


def test_fit_logs_r2_per_epoch_from_a_fresh_state():
    config.set(data_parallel_degree=1)
    try:
        model = _regression_model()
        model.compile(keras.optimizers.SGD(0.05), "mse", metrics=["r2_score"])
        history = model.fit(X, Y, epochs=4, batch_size=BATCH, verbose=0).history
        assert history["r2_score"][-1] > history["r2_score"][0]  # learning raises R²
        assert model.evaluate(X, Y, batch_size=BATCH, verbose=0, return_dict=True)["r2_score"] == pytest.approx(
            _r2(Y, model.predict(X, verbose=0)), rel=1e-5)
    finally:
        config.reset()


def test_r2_score_argument_and_shape_errors():
    with pytest.raises(ValueError, match=r"class_aggregation.*received class_aggregation='mean'"):
        metrics.R2Score(class_aggregation="mean")
    with pytest.raises(ValueError, match=r"num_regressors.*received num_regressors=-1"):
        metrics.R2Score(num_regressors=-1)
    with pytest.raises(ValueError, match=r"R2Score 'r2_score' expects 2D inputs.*\(2, 3, 1\)"):
        metrics.R2Score().update_state(np.zeros((2, 3, 1)), np.zeros((2, 3, 1)))
    with pytest.raises(ValueError, match=r"`recall` in the range \[0, 1\], received recall=1.5"):
        metrics.PrecisionAtRecall(1.5)
    with pytest.raises(ValueError, match=r"num_thresholds` to be an integer > 0, received num_thresholds=0"):
        metrics.SensitivityAtSpecificity(0.5, num_thresholds=0)
