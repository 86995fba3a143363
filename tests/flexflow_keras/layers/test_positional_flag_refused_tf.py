"""A layer or model called with a Python bool positionally (keras.io's GAN-ADA: ``self.augmenter(images,
training)``) is Keras 3.15's ValueError ("Only input tensors may be passed as positional arguments"), not
Python's "got multiple values for argument 'training'"; the keyword form runs."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402

pytestmark = pytest.mark.tf


def _augmenter(k):
    class Augmenter(k.Model):
        def __init__(self):
            super().__init__()
            self.inner = k.Sequential([k.layers.Dense(2)])

        def call(self, x, training):
            return self.inner(x, training)

    return Augmenter()


@pytest.mark.parametrize("k", [keras, tf.keras], ids=["ours", "tf_keras"])
def test_a_positional_bool_is_refused_and_the_keyword_runs(k):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="(?i)only input tensors may be passed as positional arguments.*True"):
        _augmenter(k)(x, training=True)
    dense = k.layers.Dense(2)
    with pytest.raises(ValueError, match="(?i)only input tensors may be passed as positional"):
        dense(x, False)
    assert tuple(k.Sequential([k.layers.Dense(2)])(x, training=True).shape) == (2, 2)
