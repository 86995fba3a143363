"""The metrics of metrics/extra.py (and more argument combinations of the confusion metrics) against
Keras 3 on the same predictions, over several weighted batches; and their results through
compile(metrics=...) -> evaluate()."""


import numpy as np
import pytest

pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import backend as ff_backend  # noqa: E402
from flexflow_keras import metrics  # noqa: E402

pytestmark = pytest.mark.tf

rng = np.random.default_rng(3)
N, C = 36, 4
logits = rng.standard_normal((N, C)).astype(np.float32)
probs = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float32)
ids = rng.integers(0, C, N)
onehot = np.eye(C, dtype=np.float32)[ids]
bt = rng.integers(0, 2, (N, 1)).astype(np.float32)
bp = rng.uniform(0, 1, (N, 1)).astype(np.float32)
pm = (2 * bt - 1).astype(np.float32)  # -1/1 labels
reg_t = rng.uniform(0.1, 2, (N, 3)).astype(np.float32)
reg_p = rng.uniform(0.1, 2, (N, 3)).astype(np.float32)
multi_t = rng.integers(0, 2, (N, C)).astype(np.float32)
seg_t = rng.integers(0, C, (N, 5))
seg_p = rng.integers(0, C, (N, 5))
sw = rng.uniform(0, 2, N).astype(np.float32)

CASES = [
    ("CosineSimilarity", {}, reg_t, reg_p - 1.0),
    ("LogCoshError", {}, reg_t, reg_p),
    ("KLDivergence", {}, onehot, probs),
    ("Poisson", {}, reg_t, reg_p),
    ("MeanAbsolutePercentageError", {}, reg_t, reg_p),
    ("MeanSquaredLogarithmicError", {}, reg_t, reg_p),
    ("Hinge", {}, bt, bp * 2 - 1),
    ("Hinge", {}, pm, bp * 2 - 1),
    ("SquaredHinge", {}, bt, bp * 2 - 1),
    ("CategoricalHinge", {}, onehot, logits),
    ("F1Score", {}, multi_t, probs),
    ("F1Score", {"average": "macro", "threshold": 0.3}, multi_t, probs),
    ("F1Score", {"average": "micro"}, onehot, probs),
    ("FBetaScore", {"average": "weighted", "beta": 2.0, "threshold": 0.25}, multi_t, probs),
    ("MeanIoU", {"num_classes": C}, seg_t, seg_p),
    ("MeanIoU", {"num_classes": C, "ignore_class": 0}, ids, probs.argmax(-1)),
    ("IoU", {"num_classes": C, "target_class_ids": [1, 3]}, seg_t, seg_p),
    ("BinaryIoU", {"target_class_ids": [1], "threshold": 0.4}, bt, bp),
    ("OneHotIoU", {"num_classes": C, "target_class_ids": [0, 2]}, onehot, probs),
    ("OneHotMeanIoU", {"num_classes": C}, onehot, probs),
    ("AUC", {"curve": "PR", "num_thresholds": 37}, bt, bp),
    ("AUC", {"multi_label": True, "num_thresholds": 23}, multi_t, probs),
    ("AUC", {"multi_label": True, "curve": "PR", "label_weights": [1.0, 0.5, 2.0, 0.0]}, multi_t, probs),
    ("AUC", {"label_weights": [1.0, 0.5, 2.0, 0.3]}, multi_t, probs),
    ("AUC", {"curve": "ROC", "summation_method": "majoring", "num_thresholds": 11}, bt, bp),
    ("Precision", {"top_k": 1, "class_id": 2}, onehot, probs),
    ("Recall", {"thresholds": 0.3, "class_id": 1}, onehot, probs),
    ("TrueNegatives", {"thresholds": [0.25, 0.5]}, bt, bp),
    ("FalsePositives", {}, bt, bp),
    ("TopKCategoricalAccuracy", {"k": 1}, onehot, probs),
    ("SparseTopKCategoricalAccuracy", {"k": 2}, ids[:, None], probs),
]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name,kwargs,y_true,y_pred", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_metric_matches_keras(name, kwargs, y_true, y_pred, weighted):
    keras.backend.clear_session()  # both name counters fresh: unnamed repeats are numbered alike
    ff_backend.clear_session()
    ours, theirs = getattr(metrics, name)(**kwargs), getattr(keras.metrics, name)(**kwargs)
    assert ours.name == theirs.name
    assert getattr(metrics, name)(**kwargs).name == getattr(keras.metrics, name)(**kwargs).name  # auc_1
    for lo, hi in ((0, 10), (10, 25), (25, N)):
        w = sw[lo:hi] if weighted else None
        if w is not None and "IoU" in name:  # Keras counts IoU weights as integers
            w = np.round(w)
            w = np.repeat(w[:, None], y_true.shape[1], 1) if y_true.ndim == 2 and "OneHot" not in name \
                and name != "BinaryIoU" else w
        ours.update_state(y_true[lo:hi], y_pred[lo:hi], sample_weight=w)
        theirs.update_state(y_true[lo:hi], y_pred[lo:hi], sample_weight=w)
    np.testing.assert_allclose(np.asarray(ours.result()), np.asarray(theirs.result()), rtol=2e-5, atol=2e-6)
    again = type(ours).from_config(ours.get_config())
    assert again.get_config() == ours.get_config()
    if hasattr(metrics.extra, name):
        assert set(theirs.get_config()) <= set(ours.get_config())


def test_string_identifiers_and_errors():
    assert isinstance(metrics.get("logcosh"), metrics.LogCoshError)
    assert isinstance(metrics.get("kl_divergence"), metrics.KLDivergence)
    assert isinstance(metrics.get("mape"), metrics.MeanAbsolutePercentageError)
    assert isinstance(metrics.get("f1_score"), metrics.F1Score)
    with pytest.raises(ValueError, match="num_classes"):
        metrics.get("MeanIoU")
    with pytest.raises(ValueError, match="average"):
        metrics.F1Score(average="mean")


@pytest.fixture
def _one_processor():
    ff.config.set(data_parallel_degree=1)  # no strategy search for this tiny model
    yield
    ff.config.reset()


@pytest.mark.usefixtures("_one_processor")
def test_compiled_metrics_through_evaluate_match_keras():
    """Stats computed by the step's metric task (per shard, merged) equal Keras' on model.predict."""
    x = rng.standard_normal((40, 6)).astype(np.float32)
    y = rng.integers(0, 3, 40)
    yo = np.eye(3, dtype=np.float32)[y]
    model = ff.Sequential([ff.Input((6,)), ff.layers.Dense(3, activation="softmax")])
    model.compile("sgd", "categorical_crossentropy",
                  metrics=[metrics.F1Score(average="macro"), metrics.OneHotMeanIoU(num_classes=3),
                           metrics.AUC(num_thresholds=50), metrics.Precision(top_k=2), "kl_divergence",
                           metrics.AUC(multi_label=True, name="ml_auc")])
    got = model.evaluate(x, yo, batch_size=16, return_dict=True, verbose=0)
    p = model.predict(x, verbose=0)
    for key, theirs in [("f1_score", keras.metrics.F1Score(average="macro")),
                        ("one_hot_mean_io_u", keras.metrics.OneHotMeanIoU(num_classes=3)),
                        ("auc", keras.metrics.AUC(num_thresholds=50)),
                        ("precision", keras.metrics.Precision(top_k=2)),
                        ("kl_divergence", keras.metrics.KLDivergence()),
                        ("ml_auc", keras.metrics.AUC(multi_label=True))]:
        theirs.update_state(yo, p)
        assert got[key] == pytest.approx(float(theirs.result()), rel=1e-4, abs=1e-6), key
    per_class = ff.Sequential([ff.Input((6,)), ff.layers.Dense(3, activation="softmax")])
    per_class.compile("sgd", "categorical_crossentropy", metrics=[metrics.F1Score()])
    hist = per_class.fit(x, yo, epochs=1, batch_size=20, verbose=0)
    assert np.asarray(hist.history["f1_score"][0]).shape == (3,)
