"""AUC with evenly spaced thresholds counts scores by Keras 3's optimized bucketing (metrics_utils: the
float32 bucket ceil(s·(T-1)) - 1, floored at 0 for the -epsilon threshold), not by comparing each score with
the float64 thresholds: a float32 score that lands on a threshold k/(T-1) (3/199 is 3e-10 above it in
float64) was counted positive there, where Keras counts it in the bucket below: on scores at the thresholds
AUC() gave 0.48160 against TF's 0.48171 (found comparing keras.io's EEG signal classification, whose
validation AUC() is taken on softmax outputs)."""

import numpy as np
import pytest

import flexflow_keras as ff

rng = np.random.default_rng(0)
ON_THRESHOLDS = (rng.integers(0, 200, 400) / 199.0).astype("float32")
LABELS = rng.integers(0, 2, 400).astype("float32")


def test_a_score_on_a_threshold_is_counted_below_it():
    auc = ff.metrics.AUC()
    score = np.float32(3 / 199)
    assert float(score) > 3 / 199  # the float64 comparison would count it positive at threshold 3
    auc.update_state(np.array([1.0]), np.array([score]))
    tp = np.asarray(auc._state)[0]
    np.testing.assert_array_equal(tp[:3], [1, 1, 1])
    np.testing.assert_array_equal(tp[3:], np.zeros(197))
    zero = ff.metrics.AUC()
    zero.update_state(np.array([0.0]), np.array([0.0], "float32"))  # a score of 0 passes the -epsilon threshold
    assert np.asarray(zero._state)[1][0] == 1


@pytest.mark.parametrize("kwargs", [{}, {"num_thresholds": 50}, {"curve": "PR"}, {"multi_label": True},
                                    {"thresholds": [0.25, 0.5, 0.75]}])
def test_scores_on_thresholds_as_tensorflow(kwargs):
    tf_keras = pytest.importorskip("tensorflow.keras")
    y, p = (LABELS.reshape(80, 5), ON_THRESHOLDS.reshape(80, 5)) if kwargs.get("multi_label") else (LABELS, ON_THRESHOLDS)
    weights = rng.random(len(y)).astype("float32")
    for w in (None, weights):
        got, want = ff.metrics.AUC(**kwargs), tf_keras.metrics.AUC(**kwargs)
        got.update_state(y, p, sample_weight=w)
        want.update_state(y, p, sample_weight=w)
        np.testing.assert_allclose(float(np.asarray(got.result())), float(want.result()), rtol=1e-6)
