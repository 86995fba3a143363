"""`tf.random.split` / `tf.random.fold_in` and full-range stateless integers under `python -m flexflow_keras`
give TensorFlow 2.21's values: TensorFlow's data augmentation tutorial derives a second seed per image with
``tf.random.split(seed, num=1)[0, :]`` inside a Dataset.map (the seeds from a zipped Counter, int64); it was
refused as raw TensorFlow, and so were stateless_uniform draws with minval=maxval=None. A seed of Python ints
(or NumPy integer scalars) is int32, a tensor keeps its dtype, as TensorFlow converts them."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _cases(t):
    return {
        "split tensor int32": lambda: t.random.split(t.constant([3, 7]), num=2),
        "split list": lambda: t.random.split([1, 2]),
        "split numpy scalars": lambda: t.random.split((np.int64(5), np.int64(5)), num=1),
        "split int64 tensors": lambda: t.random.split((t.constant(5, t.int64), t.constant(5, t.int64)), num=3),
        "split int64 array": lambda: t.random.split(np.array([9, 4], np.int64)),
        "fold_in": lambda: t.random.fold_in([1, 2], 7),
        "full int64": lambda: t.random.stateless_uniform([3], seed=[4, 5], minval=None, maxval=None, dtype=t.int64),
        "full int32": lambda: t.random.stateless_uniform([2, 3], seed=[4, 5], minval=None, maxval=None,
                                                        dtype=t.int32),
        "split in map": lambda: next(iter(t.data.Dataset.from_tensor_slices(np.arange(3, dtype=np.int64)).map(
            lambda x: t.random.split((x, x), num=1)))),
    }


@pytest.mark.parametrize("case", list(_cases(tf)))
def test_seed_draws_as_tf(case):
    theirs = np.asarray(_cases(tf)[case]())
    ours = np.asarray(_cases(FFTF)[case]())
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)
