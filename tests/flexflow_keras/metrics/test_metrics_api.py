"""The additive metric protocol, get/resolve errors, and resolution without label shapes."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import losses, metrics


def _all_metrics():
    return [metrics.SparseCategoricalAccuracy(), metrics.CategoricalAccuracy(), metrics.BinaryAccuracy(),
            metrics.MeanSquaredError(), metrics.RootMeanSquaredError(), metrics.Precision(), metrics.Recall(),
            metrics.AUC(num_thresholds=20), metrics.TopKCategoricalAccuracy(k=2),
            metrics.SparseCategoricalCrossentropy()]


def _data(metric, rng, n):
    p = rng.uniform(0.01, 1, (n, 4))
    p /= p.sum(-1, keepdims=True)
    ids = rng.integers(0, 4, n)
    name = type(metric).__name__
    if name.startswith("Sparse"):
        return ids, p
    if name in ("Precision", "Recall", "AUC", "BinaryAccuracy"):
        return (ids[:, None] == 0).astype(np.float32), p[:, :1]
    if name in ("MeanSquaredError", "RootMeanSquaredError"):
        return rng.standard_normal((n, 4)), p
    return np.eye(4)[ids], p


@pytest.mark.parametrize("metric", _all_metrics(), ids=lambda m: type(m).__name__)
def test_shard_stats_add_up_to_the_whole_batch(metric):
    rng = np.random.default_rng(1)
    y, p = _data(metric, rng, 24)
    w = rng.uniform(0, 1, 24)
    whole = metric.batch_stats(y, p, w)
    shards = sum(metric.batch_stats(y[i:i + 6], p[i:i + 6], w[i:i + 6]) for i in range(0, 24, 6))
    np.testing.assert_allclose(shards, whole, rtol=1e-12, atol=1e-12)
    before = np.copy(metric.variables[0])
    metric.batch_stats(y, p, w)
    np.testing.assert_array_equal(metric.variables[0], before)  # batch_stats does not touch the state
    metric.merge_stats(shards)
    a = metric.result()
    metric.reset_state()
    metric.update_state(y, p, w)
    assert metric.result() == pytest.approx(a)
    with pytest.raises(ValueError, match="stats of shape"):
        metric.merge_stats(np.zeros(99))


def test_get_and_errors():
    assert isinstance(metrics.get("categorical_accuracy"), metrics.CategoricalAccuracy)
    assert isinstance(metrics.get("mse"), metrics.MeanSquaredError)
    assert isinstance(metrics.get("AUC"), metrics.AUC)
    assert isinstance(metrics.get(metrics.Recall), metrics.Recall)
    m = metrics.Precision()
    assert metrics.get(m) is m
    d = metrics.get({"class_name": "BinaryAccuracy", "config": {"threshold": 0.3}})
    assert d.threshold == 0.3

    def my_metric(y_true, y_pred):
        return np.abs(y_true - y_pred).max(axis=-1)

    wrapped = metrics.get(my_metric)
    assert wrapped.name == "my_metric"
    assert wrapped(np.zeros((2, 2)), np.array([[1.0, 3.0], [1.0, 1.0]])) == pytest.approx(2.0)
    wrapped_loss = metrics.get(losses.MeanAbsoluteError())
    assert wrapped_loss(np.zeros((2, 1)), np.ones((2, 1))) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="Valid metrics: 'accuracy'.*categorical_accuracy"):
        metrics.get("acuracy")


def test_resolution_from_the_loss_without_labels():
    sparse, cce, bce = (losses.get(n) for n in ("sparse_categorical_crossentropy", "categorical_crossentropy",
                                                 "binary_crossentropy"))
    assert isinstance(metrics.resolve_metric("accuracy", sparse, None, (None, 10)), metrics.SparseCategoricalAccuracy)
    assert isinstance(metrics.resolve_metric("accuracy", cce, None, (None, 10)), metrics.CategoricalAccuracy)
    assert isinstance(metrics.resolve_metric("acc", bce, None, (None, 1)), metrics.BinaryAccuracy)
    ce = metrics.resolve_metric("crossentropy", losses.SparseCategoricalCrossentropy(from_logits=True),
                                (None,), (None, 10))
    assert isinstance(ce, metrics.SparseCategoricalCrossentropy) and ce.name == "crossentropy"
    assert ce._fn_kwargs["from_logits"] is True
    with pytest.raises(ValueError, match="output's shape"):
        metrics.resolve_metric("accuracy", sparse, None, None)


def test_directions_and_config_round_trip():
    assert metrics.SparseCategoricalAccuracy().direction == "up"
    assert metrics.MeanSquaredError().direction == "down"
    for m in [metrics.AUC(num_thresholds=30, curve="PR"), metrics.Precision(thresholds=[0.2, 0.7], top_k=2),
              metrics.BinaryAccuracy(threshold=0.2), metrics.TopKCategoricalAccuracy(k=3)]:
        again = metrics.deserialize(metrics.serialize(m))
        assert again.get_config() == m.get_config()
    with pytest.raises(ValueError, match="multi_label"):
        metrics.AUC(num_labels=3)  # only meaningful with multi_label=True


def test_function_metrics_log_under_their_snake_case_names_as_keras3():
    """metrics=[myMAE] logs my_mae (and val_my_mae, the key a callback's monitor= names), a lambda lambda."""
    def myMAE(t, p):  # noqa: N802 (the spelling the public scripts use)
        return keras.ops.mean(keras.ops.abs(t - p), axis=-1)

    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    m.compile("sgd", "mse", metrics=[myMAE, lambda t, p: keras.ops.mean(t - p, axis=-1),
                                     lambda t, p: keras.ops.mean(p - t, axis=-1)])
    h = m.fit(np.ones((8, 4)), np.ones((8, 1)), validation_split=0.5, verbose=0)
    assert set(h.history) == {"loss", "my_mae", "lambda", "lambda_1", "val_loss", "val_my_mae", "val_lambda",
                              "val_lambda_1"}  # the second lambda does not overwrite the first
    np.testing.assert_allclose(h.history["lambda"], np.negative(h.history["lambda_1"]), rtol=1e-6)
