"""`tf.data.experimental.Counter()` / `tf.data.Dataset.counter(start, step, dtype)` under `python -m
flexflow_keras` count without end as TensorFlow 2.21's, ended by a take or by zipping with a finite dataset:
TensorFlow's data augmentation tutorial zips ``(images, (counter, counter))`` to seed each image's stateless
ops. The counter was refused as raw TensorFlow, and a zip could not take an endless member."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402
from tests.flexflow_keras.tf_compare import plain as _plain  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")




def _cases(t):
    c = t.data.experimental.Counter()
    return {
        "take": c.take(4),
        "start step": t.data.Dataset.counter(3, 2).take(3),
        "int32": t.data.Dataset.counter(dtype=t.int32).take(2).map(lambda v: v * 3),
        "zip nested": t.data.Dataset.zip((t.data.Dataset.range(3), (c, c))),
        "zip batched": t.data.Dataset.zip((t.data.Dataset.range(5), (c, c))).batch(2),
        "zip first": t.data.Dataset.zip((c, t.data.Dataset.range(10))).take(2).map(lambda a, b: a + b),
        "zip dict": t.data.Dataset.zip({"x": t.data.Dataset.range(2), "seed": c}),
        "seeded images": t.data.Dataset.zip((t.data.Dataset.from_tensor_slices(np.ones((3, 4), "float32")), (c, c)))
        .map(lambda x, seed: t.random.stateless_uniform([2], seed=seed) + x[0]),
    }


@pytest.mark.parametrize("case", list(_cases(tf)))
def test_counter_as_tf(case):
    theirs = [_plain(e) for e in _cases(tf)[case]]
    ours = [_plain(e) for e in _cases(FFTF)[case]]
    assert ours == theirs if case != "seeded images" else np.allclose(ours, theirs, rtol=1e-6)
