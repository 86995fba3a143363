"""AUC of predictions outside [0, 1] (logits of a Dense(1) trained with BinaryCrossentropy(from_logits=True)
and compiled with metrics=["AUC"], as keras.io's structured-data classifiers do): Keras 3 buckets evenly
spaced thresholds by predictions clipped to [0, 1] (metrics_utils' optimized path), so a logit of -0.5
counts as a score of 0; uneven explicit thresholds compare the raw scores. Ours compared raw scores
everywhere: evaluate's AUC was 0.29 where tf.keras gives 0.60, AUC() 0.1875 against 0.65625, silently."""

import numpy as np
import pytest

tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
Y = np.array([0, 1, 1, 0, 1, 0, 0, 1], "float32")
LOGITS = np.array([-2.0, 0.5, 3.0, 0.2, -0.5, 1.5, -1.0, 0.8], "float32")
KWARGS = [{}, {"num_thresholds": 5}, {"curve": "PR"}, {"summation_method": "minoring"},
          {"thresholds": [0.25, 0.5, 0.75]}, {"thresholds": [0.1, 0.5, 0.6]}, {"from_logits": True}]


@pytest.mark.parametrize("kwargs", KWARGS, ids=[str(k) for k in KWARGS])
def test_auc_of_scores_outside_0_1_matches_tf_keras(kwargs):
    want, got = tk.metrics.AUC(**kwargs), ff.metrics.AUC(**kwargs)
    want.update_state(Y, LOGITS)
    got.update_state(Y, LOGITS)
    np.testing.assert_allclose(float(got.result()), float(want.result()), rtol=1e-5)


def test_multi_label_auc_of_logits_matches_tf_keras():
    y, p = np.stack([Y, Y[::-1]], axis=1), np.stack([LOGITS, -LOGITS], axis=1)
    want, got = tk.metrics.AUC(multi_label=True), ff.metrics.AUC(multi_label=True)
    want.update_state(y, p)
    got.update_state(y, p)
    np.testing.assert_allclose(float(got.result()), float(want.result()), rtol=1e-5)


def test_compiled_auc_on_a_logit_output_matches_tf_keras():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 3)).astype("float32"), rng.integers(0, 2, 16)
    tk.utils.set_random_seed(0)
    results, weights = [], None
    for K in (tk, ff):
        inp = K.Input((3,))
        m = K.Model(inp, K.layers.Dense(1)(inp))
        weights = m.get_weights() if weights is None else weights
        m.set_weights(weights)
        m.compile(loss=K.losses.BinaryCrossentropy(from_logits=True), metrics=["AUC"])
        results.append(m.evaluate(x, y, verbose=0, batch_size=16))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5)
