"""Keras 3's stateless metric API (stateless_update_state / stateless_result / stateless_reset_state,
metrics/base.py) against tf.keras 3.15: built-in metrics, a metric written with add_weight and a Mean, as
in Deep Learning with Python 3rd ed. ch. 7 ("Low-level usage of metrics")."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

rng = np.random.default_rng(3)
targets = rng.integers(0, 3, 12)
preds = rng.dirichlet(np.ones(3), 12).astype(np.float32)
sw = rng.uniform(0.2, 2.0, 12).astype(np.float32)


def _run(mod, make):
    """Chained stateless updates over three batches, the result after each, then a reset; and the
    metric's own state afterwards (it must not have moved)."""
    metric = make(mod)
    state = metric.variables
    results = []
    for lo in (0, 4, 8):
        state = metric.stateless_update_state(state, targets[lo:lo + 4], preds[lo:lo + 4],
                                              sample_weight=sw[lo:lo + 4])
        results.append(float(metric.stateless_result(state)))
    reset = metric.stateless_reset_state()
    return results, float(metric.stateless_result(reset)), float(metric.result())


@pytest.mark.parametrize("make", [
    lambda m: m.metrics.SparseCategoricalAccuracy(),
    lambda m: m.metrics.SparseTopKCategoricalAccuracy(k=2),
    lambda m: m.metrics.SparseCategoricalCrossentropy(),
], ids=["sparse_acc", "top2", "sce"])
def test_builtin_stateless_matches_keras(make):
    ours, theirs = _run(ff, make), _run(keras, make)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert ours[1:] == pytest.approx(theirs[1:])  # reset state's result; own state untouched


def test_mean_stateless_and_state_untouched():
    def go(mod):
        m = mod.metrics.Mean()
        m.update_state([10.0])
        state = m.stateless_reset_state()
        for v in [0.0, 1.0, 2.0, 3.0, 4.0]:
            state = m.stateless_update_state(state, v)
        return float(m.stateless_result(state)), float(m.result())

    assert go(ff) == pytest.approx(go(keras))
    assert go(ff) == pytest.approx((2.0, 10.0))


def _rmse_class(mod):
    ops = mod.ops

    class RootMeanSquaredError(mod.metrics.Metric):
        def __init__(self, name="rmse", **kwargs):
            super().__init__(name=name, **kwargs)
            self.mse_sum = self.add_weight(name="mse_sum", initializer="zeros")
            self.total_samples = self.add_weight(name="total_samples", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            y_true = ops.one_hot(y_true, num_classes=ops.shape(y_pred)[1])
            self.mse_sum.assign_add(ops.sum(ops.square(y_true - y_pred)))
            self.total_samples.assign_add(ops.shape(y_pred)[0])

        def result(self):
            return ops.sqrt(self.mse_sum / self.total_samples)

    return RootMeanSquaredError


def test_user_metric_stateless_matches_keras():
    def go(mod):
        m = _rmse_class(mod)()
        m.update_state(targets[:2], preds[:2])
        own = float(m.result())
        state = m.stateless_reset_state()
        zeros = [float(np.asarray(v)) for v in state]
        out = []
        for lo in (0, 6):
            state = m.stateless_update_state(state, targets[lo:lo + 6], preds[lo:lo + 6])
            out.append(float(m.stateless_result(state)))
        return out, zeros, own, float(m.result()), len(state)

    ours, theirs = go(ff), go(keras)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert ours[1:] == pytest.approx(theirs[1:])


def test_wrong_number_of_variables_is_keras_error():
    for mod in (ff, keras):
        m = mod.metrics.SparseCategoricalAccuracy()
        n = len(m.variables)
        with pytest.raises(ValueError, match=r"corresponding 1:1 to SparseCategoricalAccuracy\(\)\.variables\. "
                                             rf"Received list with length {n + 1}, but expected {n} variables"):
            m.stateless_update_state(list(m.variables) + [0.0], [0], [[1.0, 0.0]])
        with pytest.raises(ValueError, match="corresponding 1:1"):
            m.stateless_result([])
