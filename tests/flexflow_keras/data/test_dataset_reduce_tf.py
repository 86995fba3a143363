"""`Dataset.reduce(initial_state, reduce_func)` under python -m flexflow_keras, against TensorFlow 2.21: the
fold over one pass, Python initial states as tf.convert_to_tensor types them (the element-counting idiom
``ds.reduce(0, lambda n, _: n + 1)`` gives an int32 scalar), structured states, and a state whose dtype
changes is a TypeError. It was missing ('object has no attribute reduce')."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.errors import DataError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _cases(t):
    d = t.data.Dataset.from_tensor_slices
    return [
        d(np.arange(10)).reduce(0, lambda n, _: n + 1),
        d(np.arange(10, dtype=np.float32)).reduce(0.0, lambda s, x: s + x),
        d((np.arange(6), np.arange(6) * 2)).batch(2).reduce(
            (np.int64(0), np.int64(0)), lambda s, xy: (s[0] + t.reduce_sum(xy[0]), s[1] + t.reduce_sum(xy[1]))),
        d(np.arange(5)).filter(lambda x: x > 1).reduce(np.int64(0), lambda s, x: s + x),
        d(np.arange(4)).take(0).reduce(7, lambda s, x: s),
    ]


def test_reduce_folds_as_tensorflow():
    for ours, theirs in zip(_cases(FFTF), _cases(tf), strict=True):
        for a, b in zip(tf.nest.flatten(ours), tf.nest.flatten(theirs), strict=True):
            assert np.asarray(a).dtype == b.numpy().dtype and np.asarray(a).tolist() == b.numpy().tolist()


def test_a_state_that_changes_dtype_and_an_endless_dataset_are_errors():
    d = FFTF.data.Dataset.from_tensor_slices(np.arange(5))
    with pytest.raises(TypeError, match="dtypes"):
        d.reduce(0, lambda s, x: s + x)  # int32 + int64 elements
    with pytest.raises(DataError, match="never return"):
        d.repeat().reduce(0, lambda s, x: s)
