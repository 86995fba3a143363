"""A ``compute_metrics`` override's logs are the keys it returns, as in Keras 3.15: one returning only its
own tracker logs no "loss" (History, callbacks and evaluate alike; evaluate's list is then that one value),
one returning ``super().compute_metrics(...)`` or ``{m.name: m.result() for m in self.metrics}`` (Keras'
loss tracker comes first in ``self.metrics``) logs the loss. We always logged "loss" (and each output's loss),
and every compiled or held metric, whatever the override returned."""

import numpy as np
import pytest

import flexflow_keras

rng = np.random.default_rng(0)
X = rng.normal(size=(32, 4)).astype("float32")
Y = rng.normal(size=(32, 1)).astype("float32")


def _model_class(lib, mode):
    class Tracked(lib.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = lib.layers.Dense(1, kernel_initializer="ones")
            self.pred_mean = lib.metrics.Mean(name="pred_mean")

        def call(self, x):
            return self.dense(x)

        def compute_metrics(self, x, y, y_pred, sample_weight=None):
            if mode == "super":
                logs = super().compute_metrics(x, y, y_pred, sample_weight)
                self.pred_mean.update_state(y_pred)
                return logs
            if mode == "own":
                self.pred_mean.update_state(y_pred)
                return {"pred_mean": self.pred_mean.result()}
            for m in self.metrics:  # "all": every metric of the model, its loss tracker first
                if m is self.pred_mean:
                    m.update_state(y_pred)
                elif m.name != "loss":
                    m.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

    return Tracked


def _logs(lib, mode):
    model = _model_class(lib, mode)()
    model.compile(lib.optimizers.SGD(0.01), "mse", metrics=None if mode == "own" else ["mae"])
    history = model.fit(X, Y, epochs=2, batch_size=8, verbose=0, shuffle=False, validation_split=0.25).history
    listed = model.evaluate(X, Y, batch_size=8, verbose=0)
    logs = model.evaluate(X, Y, batch_size=8, verbose=0, return_dict=True)
    return history, listed, logs, model.metrics[0].name


def test_an_override_without_loss_logs_no_loss():
    history, listed, logs, first = _logs(flexflow_keras, "own")
    assert sorted(history) == ["pred_mean", "val_pred_mean"]
    assert list(logs) == ["pred_mean"] and listed == pytest.approx(logs["pred_mean"])
    assert first == "loss"  # Keras' loss tracker leads model.metrics


@pytest.mark.parametrize("mode", ["super", "own", "all"])
def test_logs_as_tf_keras(mode):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _logs(flexflow_keras, mode), _logs(keras, mode)
    assert sorted(ours[0]) == sorted(theirs[0])
    for key in theirs[0]:
        np.testing.assert_allclose(ours[0][key], theirs[0][key], rtol=2e-5, err_msg=key)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=2e-5)
    assert sorted(ours[2]) == sorted(theirs[2])
    np.testing.assert_allclose([ours[2][k] for k in sorted(ours[2])], [theirs[2][k] for k in sorted(theirs[2])],
                               rtol=2e-5)
    assert ours[3] == theirs[3]


def _two_outputs(lib):
    class TwoOut(lib.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.a = lib.layers.Dense(1, kernel_initializer="ones", name="a")
            self.b = lib.layers.Dense(1, kernel_initializer="zeros", name="b")
            self.gap = lib.metrics.Mean(name="gap")

        def call(self, x):
            return {"a": self.a(x), "b": self.b(x)}

        def compute_metrics(self, x, y, y_pred, sample_weight=None):
            preds = list(y_pred.values()) if isinstance(y_pred, dict) else list(y_pred)
            self.gap.update_state(lib.ops.subtract(preds[0], preds[1]))
            return {"gap": self.gap.result()}

    model = TwoOut()
    model.compile(lib.optimizers.SGD(0.01), {"a": "mse", "b": "mae"})
    history = model.fit(X, {"a": Y, "b": Y}, epochs=1, batch_size=8, verbose=0, shuffle=False).history
    return history, model.evaluate(X, {"a": Y, "b": Y}, batch_size=8, verbose=0)


def test_two_outputs_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _two_outputs(flexflow_keras), _two_outputs(keras)
    assert sorted(ours[0]) == sorted(theirs[0]) == ["gap"]
    np.testing.assert_allclose(ours[0]["gap"], theirs[0]["gap"], rtol=2e-5)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=2e-5)


def _metrics_result(lib):
    """get_metrics_result() after fit, evaluate and reset_metrics, and returned by a compute_metrics override."""
    class Returns(lib.Model):
        def compute_metrics(self, x, y, y_pred, sample_weight=None):
            super().compute_metrics(x, y, y_pred, sample_weight)
            return self.get_metrics_result()

    out = []
    for cls in (lib.Model, Returns):
        inp = lib.Input((4,))
        model = cls(inp, lib.layers.Dense(1, kernel_initializer="ones")(inp))
        model.compile(lib.optimizers.SGD(0.01), "mse", metrics=["mae"])
        history = model.fit(X, Y, epochs=2, batch_size=8, verbose=0, shuffle=False).history
        out.append({k: float(v) for k, v in model.get_metrics_result().items()})
        out.append(history)
        model.evaluate(X[:20], Y[:20], batch_size=8, verbose=0)
        out.append({k: float(v) for k, v in model.get_metrics_result().items()})
        model.reset_metrics()
        out.append({k: float(v) for k, v in model.get_metrics_result().items()})
    return out


def test_get_metrics_result_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _metrics_result(flexflow_keras), _metrics_result(keras)
    for a, b in zip(ours, theirs, strict=True):
        assert sorted(a) == sorted(b)
        for key in b:
            np.testing.assert_allclose(a[key], b[key], rtol=2e-5, err_msg=key)
