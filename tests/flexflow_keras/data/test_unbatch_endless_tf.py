"""`unbatch()` of a dataset that repeats without end before its batch (``repeat().batch(4).unbatch()``, the
DeepLearning.AI Advanced Techniques object-localization lab's pipeline) reads its first batches as they
are needed, as tf.data does; ours read the whole (endless) input first and never returned."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _pipelines(t):
    x = np.arange(20, dtype="float32")
    ds = t.data.Dataset.from_tensor_slices(x).repeat().batch(4, drop_remainder=True)
    return ([np.asarray(b).tolist() for b in ds.unbatch().batch(3).take(9)],
            [float(np.asarray(v)) for v in ds.unbatch().take(27)])


def test_unbatch_of_an_endless_dataset_as_tf_data():
    want = _pipelines(tf)
    assert _pipelines(FFTF) == want
    assert want[0][6] == [18.0, 19.0, 0.0]  # across the repeat's boundary
