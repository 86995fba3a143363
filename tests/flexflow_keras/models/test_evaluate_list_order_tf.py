"""`evaluate()` (and `test_on_batch` / `train_on_batch`) without return_dict list their logs as Keras 3.15's
``_flatten_metrics_in_order`` does: each metric name of the model as the metric was made, found in the logs
(a name met twice gives its value twice), then the remaining logs sorted by name. With
``compile(metrics=["mae"], weighted_metrics=["mae"])`` tf.keras returns [loss, mae, mae, weighted_mae]; we
returned [loss, mae, weighted_mae], so positional unpacking of a script read the wrong values."""

import numpy as np
import pytest

import flexflow_keras

rng = np.random.default_rng(0)
X = rng.normal(size=(32, 4)).astype("float32")
Y = rng.normal(size=(32, 1)).astype("float32")
SW = rng.uniform(0.1, 1.0, size=(32,)).astype("float32")

CASES = {
    "same_metric_both": dict(outputs=1, metrics=["mae"], weighted_metrics=["mae"]),
    "order_kept": dict(outputs=1, metrics=["mse", "mae"], weighted_metrics=["mse"]),
    "duplicates": dict(outputs=1, metrics=["mae", "mae"], weighted_metrics=["mae", "mse"]),
    "two_outputs": dict(outputs=2, metrics=[["mae"], ["mae"]], weighted_metrics=[["mae"], ["mae"]]),
    "unsorted_outputs": dict(outputs=("z", "a"), metrics={"z": ["mae"], "a": ["mse"]},
                             weighted_metrics={"z": ["mae"]}),
}


def _model(lib, outputs):
    inp = lib.Input((4,))
    names = outputs if isinstance(outputs, tuple) else [f"out{i}" for i in range(outputs)]
    outs = [lib.layers.Dense(1, kernel_initializer="ones", bias_initializer="zeros", name=n)(inp) for n in names]
    return lib.Model(inp, outs if len(outs) > 1 else outs[0]), len(outs)


def _results(lib, case):
    spec = CASES[case]
    model, n = _model(lib, spec["outputs"])
    model.compile(lib.optimizers.SGD(0.01), "mse" if n == 1 else ["mse"] * n, metrics=spec["metrics"],
                  weighted_metrics=spec["weighted_metrics"])
    y = Y if n == 1 else [Y] * n
    return [model.evaluate(X, y, batch_size=32, verbose=0),
            model.evaluate(X, y, sample_weight=SW, batch_size=32, verbose=0),
            model.test_on_batch(X, y, sample_weight=SW),
            model.train_on_batch(X, y, sample_weight=SW)]


def test_same_metric_weighted_and_not_is_listed_twice():
    plain, weighted, _, _ = _results(flexflow_keras, "same_metric_both")
    assert len(plain) == 4 and len(weighted) == 4
    assert weighted[1] == weighted[2] and weighted[1] != pytest.approx(weighted[3])


@pytest.mark.parametrize("case", sorted(CASES))
def test_list_order_as_tf_keras(case):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _results(flexflow_keras, case), _results(keras, case)
    for a, b in zip(ours, theirs, strict=True):
        assert len(a) == len(b)
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=2e-5)


def _own_step_results(lib):
    class OwnTestStep(lib.Model):
        """A test_step that logs its own trackers, one of them named "loss" as compile's."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = lib.layers.Dense(1, kernel_initializer="ones")
            self.loss_tracker = lib.metrics.Mean(name="loss")
            self.mae_tracker = lib.metrics.MeanAbsoluteError(name="mae")

        def call(self, x):
            return self.dense(x)

        def test_step(self, data):
            x, y = data
            y_pred = self(x)
            self.loss_tracker.update_state(lib.ops.mean((y_pred - y) ** 2))
            self.mae_tracker.update_state(y, y_pred)
            return {"mae": self.mae_tracker.result(), "loss": self.loss_tracker.result()}

    model = OwnTestStep()
    model.compile(lib.optimizers.SGD(0.01), "mse")
    return model.evaluate(X, Y, batch_size=32, verbose=0)


def test_own_test_step_list_as_tf_keras():
    """Keras lists self.metrics' names: compile's loss tracker, then the model's ("loss" again, "mae")."""
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _own_step_results(flexflow_keras), _own_step_results(keras)
    assert len(ours) == len(theirs) == 3
    np.testing.assert_allclose(ours, theirs, rtol=2e-5)
