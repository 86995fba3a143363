"""`tf.data.Dataset.zip` of a nested structure of datasets gives nested elements, as TensorFlow 2.21's:
TensorFlow's data augmentation tutorial zips ``(images, (counter, counter))`` to hand each image a seed pair;
ours read the inner tuple as one dataset-like value and gave whole columns as the seed."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402
from tests.flexflow_keras.tf_compare import plain as _plain  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")




def _cases(t):
    a = t.data.Dataset.range(4)
    b = t.data.Dataset.from_tensor_slices(np.arange(10, 13))
    images = t.data.Dataset.from_tensor_slices((np.ones((3, 2, 2), "float32"), np.arange(3)))
    return {
        "tuple in tuple": t.data.Dataset.zip((a, (b, b))),
        "dict with tuple and dict": t.data.Dataset.zip({"x": a, "pair": (b, a), "d": {"q": b}}),
        "two arguments": t.data.Dataset.zip(a, (b, b)),
        "batched": t.data.Dataset.zip((a, (b, b))).batch(2),
        "seeds mapped": t.data.Dataset.zip((images, (a, a))).map(lambda xy, seed: (xy[0] * 2, seed[0] + seed[1])),
    }


@pytest.mark.parametrize("case", list(_cases(tf)))
def test_nested_zip_as_tf(case):
    assert [_plain(e) for e in _cases(FFTF)[case]] == [_plain(e) for e in _cases(tf)[case]]
