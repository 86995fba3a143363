"""Regression metrics with labels one rank below the predictions, (N,) against (N, 1), as keras.io's
tensorflow_numpy_models evaluates (Boston housing targets against a Dense(1)-shaped output with
MeanAbsolutePercentageError): Keras 3's mean_absolute_percentage_error, mean_squared_logarithmic_error and
log_cosh squeeze or expand to the same rank, so the labels meet the predictions element by element. Ours
broadcast (N,) against (N, 1) to (N, N): evaluate's MAPE was 79.98 where tf.keras gives 79.62, with no error.
MeanSquaredError and MeanAbsoluteError were already right."""

import numpy as np
import pytest

tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
NAMES = ["MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "LogCoshError"]


def _data():
    rng = np.random.default_rng(0)
    return rng.random(6) * 0.8 + 0.1, (rng.random((6, 1)) * 0.8 + 0.1).astype("float32")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("swap", [False, True])
def test_metric_of_labels_one_rank_below_matches_tf_keras(name, swap):
    y, p = _data()
    args = (p, y) if swap else (y, p)
    want, got = getattr(tk.metrics, name)(), getattr(ff.metrics, name)()
    want.update_state(*args)
    got.update_state(*args)
    np.testing.assert_allclose(float(got.result()), float(want.result()), rtol=1e-5)


def test_evaluate_reports_tf_keras_mape_for_1d_targets():
    rng = np.random.default_rng(1)
    x, y = rng.random((12, 3)).astype("float32"), rng.random(12) * 30 + 5
    tk.utils.set_random_seed(0)
    results = []
    weights = None
    for K in (tk, ff):
        m = K.Sequential([K.Input((3,)), K.layers.Dense(1)])
        if weights is None:
            weights = m.get_weights()
        m.set_weights(weights)
        m.compile(optimizer="adam", loss="mean_squared_error", metrics=[K.metrics.MeanAbsolutePercentageError()])
        results.append(m.evaluate(x, y, verbose=0))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5)
