"""R2Score, PearsonCorrelation, ConcordanceCorrelation and the best-at-a-constraint confusion metrics
(metrics/r2_score.py, correlation.py, confusion_at.py) against Keras 3 on the same predictions, over
several weighted batches; the metric functions Keras 3 exposes in keras.metrics; string names."""

import re

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from flexflow_keras import backend as ff_backend  # noqa: E402
from flexflow_keras import metrics  # noqa: E402

pytestmark = pytest.mark.tf

rng = np.random.default_rng(5)
N, C = 40, 4
reg_t = rng.standard_normal((N, 3)).astype(np.float32)
reg_p = (reg_t + rng.standard_normal((N, 3))).astype(np.float32)
seq_t = rng.standard_normal((N, 5, 2)).astype(np.float32)
seq_p = (seq_t + rng.standard_normal((N, 5, 2))).astype(np.float32)
bt = rng.integers(0, 2, (N, 1)).astype(np.float32)
bp = np.clip(0.3 * bt + 0.7 * rng.uniform(0, 1, (N, 1)), 0, 1).astype(np.float32)
ids = rng.integers(0, C, N)
onehot = np.eye(C, dtype=np.float32)[ids]
probs = rng.dirichlet(np.ones(C), N).astype(np.float32)
sw = rng.uniform(0.1, 2.0, N).astype(np.float32)

CASES = [
    ("R2Score", {}, reg_t, reg_p),
    ("R2Score", {"class_aggregation": None}, reg_t, reg_p),
    ("R2Score", {"class_aggregation": "variance_weighted_average", "num_regressors": 2}, reg_t, reg_p),
    ("R2Score", {}, reg_t[:, 0], reg_p[:, :1]),
    ("PearsonCorrelation", {}, reg_t, reg_p),
    ("PearsonCorrelation", {"axis": (1, 2)}, seq_t, seq_p),
    ("ConcordanceCorrelation", {}, reg_t, reg_p),
    ("ConcordanceCorrelation", {"axis": 1}, seq_t, seq_p),
    ("PrecisionAtRecall", {"recall": 0.6}, bt, bp),
    ("PrecisionAtRecall", {"recall": 0.3, "class_id": 2}, onehot, probs),
    ("RecallAtPrecision", {"precision": 0.55, "num_thresholds": 13}, bt, bp),
    ("SensitivityAtSpecificity", {"specificity": 0.4}, bt, bp),
    ("SensitivityAtSpecificity", {"specificity": 0.5}, onehot, probs),
    ("SpecificityAtSensitivity", {"sensitivity": 0.7}, bt, bp * 1.4 - 0.2),  # scores outside [0, 1] too
    ("SpecificityAtSensitivity", {"sensitivity": 0.5, "num_thresholds": 1}, bt, bp),
]
BATCH_AXIS_CASES = [  # one value per batch: Keras refuses sample weights here
    ("PearsonCorrelation", {"axis": 0}, reg_t, reg_p),
    ("ConcordanceCorrelation", {"axis": (0, 1)}, reg_t, reg_p),
    ("PearsonCorrelation", {"axis": (0, 2)}, seq_t, seq_p),
]


def _run(metric, y_true, y_pred, weighted):
    n = len(y_true)
    for lo, hi in ((0, n // 3), (n // 3, n // 2), (n // 2, n)):
        metric.update_state(y_true[lo:hi], y_pred[lo:hi], sample_weight=sw[lo:hi] if weighted else None)
    return np.asarray(metric.result())


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name,kwargs,y_true,y_pred", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_metric_matches_keras(name, kwargs, y_true, y_pred, weighted):
    keras.backend.clear_session()  # both name counters fresh: unnamed repeats are numbered alike
    ff_backend.clear_session()
    ours, theirs = getattr(metrics, name)(**kwargs), getattr(keras.metrics, name)(**kwargs)
    assert ours.name == theirs.name
    assert getattr(metrics, name)(**kwargs).name == getattr(keras.metrics, name)(**kwargs).name  # auc_1
    np.testing.assert_allclose(_run(ours, y_true, y_pred, weighted), _run(theirs, y_true, y_pred, weighted),
                               rtol=2e-5, atol=2e-6)
    if isinstance(ours, metrics.confusion_at.SensitivitySpecificityBase):  # tp, fp, tn, fn per threshold
        counts = np.stack([np.asarray(v) for v in theirs.variables])
        np.testing.assert_allclose(ours.variables[0], counts, rtol=1e-6, atol=1e-5)  # Keras sums in float32
    config, their_config = ours.get_config(), theirs.get_config()
    their_config["name"] = ours.name
    assert config == their_config
    assert type(ours).from_config(config).get_config() == config
    ours.reset_state()
    theirs.reset_state()
    np.testing.assert_allclose(_run(ours, y_true[:20], y_pred[:20], weighted),
                               _run(theirs, y_true[:20], y_pred[:20], weighted), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name,kwargs,y_true,y_pred", BATCH_AXIS_CASES,
                         ids=[f"{c[0]}-{c[1]['axis']}" for c in BATCH_AXIS_CASES])
def test_batch_axis_correlations_match_keras(name, kwargs, y_true, y_pred):
    ours, theirs = getattr(metrics, name)(**kwargs), getattr(keras.metrics, name)(**kwargs)
    np.testing.assert_allclose(_run(ours, y_true, y_pred, False), _run(theirs, y_true, y_pred, False), rtol=2e-5)
    with pytest.raises(ValueError, match=r"one value per batch.*Drop sample_weight"):
        ours.update_state(y_true, y_pred, sample_weight=sw)


@pytest.mark.parametrize("fn,y_true,y_pred,kwargs", [
    ("pearson_correlation", reg_t, reg_p, {}),
    ("pearson_correlation", seq_t, seq_p, {"axis": 0}),
    ("concordance_correlation", reg_t, reg_p, {}),
    ("concordance_correlation", seq_t, seq_p, {"axis": (1, 2)}),
    ("binary_focal_crossentropy", bt, bp, {"gamma": 3.0}),
    ("categorical_focal_crossentropy", onehot, probs, {}),
    ("categorical_hinge", onehot, probs, {}),
    ("hinge", bt, bp, {}),
    ("squared_hinge", bt, bp, {}),
    ("huber", reg_t, reg_p, {"delta": 0.5}),
    ("kl_divergence", onehot, probs, {}),
    ("log_cosh", reg_t, reg_p, {}),
    ("mean_absolute_percentage_error", reg_t, reg_p, {}),
    ("mean_squared_logarithmic_error", reg_t, reg_p, {}),
    ("poisson", np.abs(reg_t), np.abs(reg_p), {}),
])
def test_metric_functions_match_keras(fn, y_true, y_pred, kwargs):
    got = np.asarray(getattr(metrics, fn)(y_true, y_pred, **kwargs))
    want = np.asarray(getattr(keras.metrics, fn)(y_true, y_pred, **kwargs))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_every_keras_metric_name_exists():
    public = {n for n in dir(keras.metrics) if not n.startswith("_")}
    assert sorted(public - set(dir(metrics))) == []


@pytest.mark.parametrize("name", ["r2_score", "R2Score", "pearson_correlation", "concordance_correlation",
                                  "PearsonCorrelation", "poisson"])
def test_string_names_keras_accepts(name):
    ours, theirs = metrics.get(name), keras.metrics.get(name)
    assert type(ours).__name__ == type(theirs).__name__


@pytest.mark.parametrize("name,arg", [("precision_at_recall", "recall=0.8"), ("RecallAtPrecision", "precision=0.8"),
                                      ("sensitivity_at_specificity", "specificity=0.8"),
                                      ("SpecificityAtSensitivity", "sensitivity=0.8")])
def test_names_of_metrics_that_need_a_value_say_which(name, arg):
    with pytest.raises(TypeError):
        keras.metrics.get(name)  # Keras fails too: the class needs its bound
    with pytest.raises(ValueError, match=re.escape(arg)):
        metrics.get(name)
