"""A `Dataset.map` function's list result is what tf.data makes of it: a list inside the returned tuple is one
tensor (tf.convert_to_tensor packs ``[xmin, ymin, xmax, ymax]``, as the DeepLearning.AI object-localization
lab returns its box), a list returned at the top is a tuple of components. Ours kept Python lists, so
`for x, (label, box) in ds: box.numpy()` was "'list' object has no attribute 'numpy'". Against TensorFlow 2.21."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _box(t):
    def read(image, label):
        xmin = t.cast(label, t.float32) / 10
        return image, (t.one_hot(label, 3), [xmin, xmin + 0.5, 2.0, 3.0])

    ds = t.data.Dataset.from_tensor_slices((np.ones((4, 2), "float32"), np.arange(4, dtype="int64"))).map(read)
    elements = [(np.asarray(b.numpy()), str(np.asarray(b).dtype)) for _, (_, b) in ds]
    batches = [(b.numpy().tolist(), tuple(b.shape)) for _, (_, b) in ds.batch(3)]
    return elements[0][0].tolist(), elements[0][1], batches


def _top_list(t):
    ds = t.data.Dataset.from_tensor_slices(np.arange(3, dtype="int32")).map(lambda v: [v, v * 2, 1.5])
    first = next(iter(ds))
    return type(first).__name__, [np.asarray(p).tolist() for p in first], [str(np.asarray(p).dtype) for p in first]


def test_list_inside_the_result_is_one_tensor_as_tf():
    assert _box(FFTF) == _box(tf)


def test_list_returned_at_the_top_is_a_tuple_as_tf():
    assert _top_list(FFTF) == _top_list(tf)
