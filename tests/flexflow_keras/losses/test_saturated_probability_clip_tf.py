"""Binary crossentropy (and binary focal crossentropy) on probabilities that reach exactly 1.0, as a
float32 sigmoid saturates: TensorFlow clips to [eps, 1 - eps] in the prediction's dtype, and 1 - 1e-7 is
0.99999988 in float32, so log(1 - q) is log(1.19e-7) = -15.94. The host functions clipped in float64
(log(1e-7) = -16.12): keras.losses.binary_crossentropy gave 16.118 where tf.keras gives 15.942, and
metrics.BinaryCrossentropy 9.268 against 9.193, silently. Found while sweeping keras.io scripts' metrics
against tf.keras (c_rank/c_bce in the sweep notes)."""

import numpy as np
import pytest

tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
Y_TRUE = np.array([[0.3], [0.6], [1.0], [0.0]], "float32")
Y_PRED = np.array([[1.0], [0.0], [1.0], [1.0]], "float32")


@pytest.mark.parametrize("fn", ["binary_crossentropy", "binary_focal_crossentropy"])
def test_loss_function_on_saturated_probabilities_matches_tf_keras(fn):
    want = np.asarray(getattr(tk.losses, fn)(Y_TRUE, Y_PRED))
    got = np.asarray(getattr(ff.losses, fn)(Y_TRUE, Y_PRED))
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("cls", ["BinaryCrossentropy", "BinaryFocalCrossentropy"])
def test_loss_object_on_saturated_probabilities_matches_tf_keras(cls):
    np.testing.assert_allclose(float(getattr(ff.losses, cls)()(Y_TRUE, Y_PRED)),
                               float(getattr(tk.losses, cls)()(Y_TRUE, Y_PRED)), rtol=1e-5)


def test_metric_on_saturated_probabilities_matches_tf_keras():
    want, got = tk.metrics.BinaryCrossentropy(), ff.metrics.BinaryCrossentropy()
    want.update_state(Y_TRUE, Y_PRED)
    got.update_state(Y_TRUE, Y_PRED)
    np.testing.assert_allclose(float(got.result()), float(want.result()), rtol=1e-5)
