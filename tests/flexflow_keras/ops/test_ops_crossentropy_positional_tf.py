"""keras.ops.categorical_crossentropy takes Keras 3's positional order (target, output, from_logits, axis):
a fourth positional argument was label_smoothing here, so ``ops.categorical_crossentropy(t, p, False, 1)``
smoothed the labels by 1 instead of reading the classes on axis 1."""

import numpy as np
import pytest

from flexflow_keras import ops

T = np.eye(3, dtype="float32")[[0, 2]].T[None]  # (1, 3, 2): classes on axis 1
P = np.array([[[0.7, 0.1], [0.2, 0.3], [0.1, 0.6]]], "float32")


def test_the_fourth_positional_argument_is_the_axis_as_in_keras():
    tf = pytest.importorskip("tensorflow")
    want = tf.keras.ops.categorical_crossentropy(T, P, False, 1).numpy()
    np.testing.assert_allclose(np.asarray(ops.categorical_crossentropy(T, P, False, 1)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ops.categorical_crossentropy(T, P, from_logits=False, axis=1)), want,
                               rtol=1e-6)
