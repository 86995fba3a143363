"""Metric results against Keras 3 over several weighted batches, and accuracy resolution against Keras'
compile_utils."""

import numpy as np
import pytest

pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from flexflow_keras import losses, metrics  # noqa: E402

pytestmark = pytest.mark.tf

rng = np.random.default_rng(0)
N, C = 40, 6
logits = rng.standard_normal((N, C)).astype(np.float32)
probs = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float32)
ids = rng.integers(0, C, N)
onehot = np.eye(C, dtype=np.float32)[ids]
bt = rng.integers(0, 2, (N, 1)).astype(np.float32)
bp = rng.uniform(0, 1, (N, 1)).astype(np.float32)
reg_t, reg_p = rng.standard_normal((N, 3)).astype(np.float32), rng.standard_normal((N, 3)).astype(np.float32)
sw = rng.uniform(0, 2, N).astype(np.float32)

CASES = [
    ("Accuracy", {}, ids, probs.argmax(-1)),
    ("BinaryAccuracy", {}, bt, bp),
    ("BinaryAccuracy", {"threshold": 0.7}, bt[:, 0], bp),
    ("CategoricalAccuracy", {}, onehot, probs),
    ("SparseCategoricalAccuracy", {}, ids, probs),
    ("SparseCategoricalAccuracy", {}, ids[:, None], probs),
    ("TopKCategoricalAccuracy", {"k": 2}, onehot, probs),
    ("SparseTopKCategoricalAccuracy", {"k": 3}, ids, probs),
    ("MeanSquaredError", {}, reg_t, reg_p),
    ("MeanAbsoluteError", {}, reg_t, reg_p),
    ("RootMeanSquaredError", {}, reg_t, reg_p),
    ("CategoricalCrossentropy", {}, onehot, probs),
    ("SparseCategoricalCrossentropy", {"from_logits": True}, ids, logits),
    ("BinaryCrossentropy", {}, bt, bp),
    ("Precision", {}, bt, bp),
    ("Recall", {"thresholds": [0.3, 0.6]}, bt, bp),
    ("Precision", {"top_k": 2}, onehot, probs),
    ("Recall", {"class_id": 2}, onehot, probs),
    ("AUC", {}, bt, bp),
    ("AUC", {"curve": "PR"}, bt, bp),
    ("AUC", {"num_thresholds": 50, "summation_method": "minoring"}, onehot, probs),
    ("TruePositives", {}, bt, bp),
    ("FalseNegatives", {"thresholds": [0.2, 0.8]}, bt, bp),
]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name,kwargs,y_true,y_pred", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_metric_matches_keras(name, kwargs, y_true, y_pred, weighted):
    ours, theirs = getattr(metrics, name)(**kwargs), getattr(keras.metrics, name)(**kwargs)
    for lo, hi in ((0, 15), (15, 32), (32, N)):
        w = sw[lo:hi] if weighted else None
        ours.update_state(y_true[lo:hi], y_pred[lo:hi], sample_weight=w)
        theirs.update_state(y_true[lo:hi], y_pred[lo:hi], sample_weight=w)
    np.testing.assert_allclose(np.asarray(ours.result()), np.asarray(theirs.result()), rtol=1e-5, atol=1e-6)
    ours.reset_state()
    theirs.reset_state()
    ours.update_state(y_true[:5], y_pred[:5])
    theirs.update_state(y_true[:5], y_pred[:5])
    np.testing.assert_allclose(np.asarray(ours.result()), np.asarray(theirs.result()), rtol=1e-5, atol=1e-6)


def test_mean_matches_keras():
    ours, theirs = metrics.Mean(), keras.metrics.Mean()
    for v, w in [(np.array([1.0, 2.0, 3.0]), None), (np.array([[4.0, 6.0]]), None), (np.array([5.0, 7.0]),
                                                                                      np.array([0.5, 2.0]))]:
        ours.update_state(v, w)
        theirs.update_state(v, w)
    assert ours.result() == pytest.approx(float(theirs.result()), rel=1e-6)


@pytest.mark.parametrize("ident", ["accuracy", "acc", "ACC"])
@pytest.mark.parametrize("yt_shape,yp_shape", [((8,), (8, 10)), ((8, 1), (8, 10)), ((8, 10), (8, 10)),
                                               ((8, 1), (8, 1)), ((8,), (8, 1)), ((8, 4), (8, 4, 3))])
def test_accuracy_resolution_matches_keras_compile(ident, yt_shape, yp_shape):
    from keras.src.trainers import compile_utils

    want = compile_utils.get_metric(ident, np.zeros(yt_shape), np.zeros(yp_shape))
    got = metrics.resolve_metric(ident, losses.get("mse"), (None,) + yt_shape[1:], (None,) + yp_shape[1:])
    assert type(got).__name__ == type(want).__name__
    assert got.name == want.name


@pytest.mark.parametrize("ident", ["mse", "mae", "categorical_accuracy", "sparse_top_k_categorical_accuracy",
                                   "AUC", "auc", "precision", "root_mean_squared_error",
                                   "TopKCategoricalAccuracy"])
def test_named_metric_resolution_matches_keras_compile(ident):
    from keras.src.trainers import compile_utils

    want = compile_utils.get_metric(ident, np.zeros((4, 5)), np.zeros((4, 5)))
    got = metrics.resolve_metric(ident, None, (None, 5), (None, 5))
    assert type(got).__name__ == type(want).__name__ and got.name == want.name
