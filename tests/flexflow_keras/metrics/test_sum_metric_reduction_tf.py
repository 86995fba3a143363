"""`keras.metrics.Sum` adds up every value, as tf.keras 3.15's: Keras reduces each sample's values with a
sum (reduce_to_samplewise_values(..., reduce_fn=ops.sum)) where Mean reduces them with a mean. Ours reduced
them with a mean for Sum too, so Sum of a (2, 3) batch gave a third of Keras' (1.03 instead of 3.1)."""

import numpy as np
import pytest

tf_keras = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
VALUES = np.array([[[0.2, 0.8], [0.4, 1.5]], [[0.9, 0.1], [0.7, -2.0]]], np.float32)  # (2, 2, 2)

CASES = {
    "rank3": (VALUES, None),
    "rank2": (VALUES[:, 0], None),
    "rank1": (VALUES[:, 0, 0], None),
    "scalar": (np.float32(2.5), None),
    "per-sample-weight": (VALUES, np.array([1.0, 2.0], np.float32)),
    "per-element-weight": (VALUES, np.array([[1.0, 0.0], [2.0, 3.0]], np.float32)),
    "full-weight": (VALUES, np.arange(8, dtype=np.float32).reshape(2, 2, 2)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_sum_and_mean_as_tf_keras(case):
    values, weight = CASES[case]
    for cls in ("Sum", "Mean"):
        got = []
        for lib in (tf_keras, ff):
            m = getattr(lib.metrics, cls)()
            m.update_state(values, sample_weight=weight)
            m.update_state(values, sample_weight=weight)  # twice: the state accumulates
            got.append(float(np.asarray(m.result())))  # Keras sums in float32 (atol), ours in float64
        np.testing.assert_allclose(got[1], got[0], rtol=1e-6, atol=1e-5, err_msg=f"{cls} {case}")
