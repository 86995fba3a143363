"""`keras.losses.Reduction`: tf.keras' legacy table of reduction names (TensorFlow 2.16+ exports it from
Keras 3's legacy module); scripts pass ``reduction=keras.losses.Reduction.NONE`` (keras.io's NER example)."""

import numpy as np
import pytest

pytest.importorskip("tensorflow")
tf_keras = pytest.importorskip("tensorflow.keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


def test_reduction_names_are_tf_keras_ones():
    R, T = ff.losses.Reduction, tf_keras.losses.Reduction
    assert (R.AUTO, R.NONE, R.SUM, R.SUM_OVER_BATCH_SIZE) == (T.AUTO, T.NONE, T.SUM, T.SUM_OVER_BATCH_SIZE)
    assert R.all() == T.all()
    R.validate("none")
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        R.validate("mean_over_everything")
    out = ff.losses.MeanSquaredError(reduction=R.NONE)(np.zeros((3, 2)), np.ones((3, 2)))
    assert np.asarray(out).shape == (3,)
