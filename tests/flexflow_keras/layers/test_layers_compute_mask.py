"""Custom layers with Keras 3's masking hooks, as the keras.io masking guide writes them: a
`compute_mask` that makes a mask, one that splits it with the outputs, and a mask-consuming
``call(inputs, mask=None)``; against tf.keras on copied weights."""

import numpy as np
import pytest
from ff_layer_harness import tf_keras

IDS = np.array([[1, 2, 0, 0, 0, 0], [3, 0, 4, 5, 6, 0], [6, 7, 8, 9, 1, 2]], "int32")


def _layers(lib):
    ops = lib.ops

    class CustomEmbedding(lib.layers.Layer):
        def __init__(self, input_dim, output_dim, **kwargs):
            super().__init__(**kwargs)
            self.input_dim, self.output_dim = input_dim, output_dim

        def build(self, input_shape):
            self.embeddings = self.add_weight(shape=(self.input_dim, self.output_dim), initializer="random_normal",
                                              name="embeddings")

        def call(self, inputs):
            return ops.take(self.embeddings, inputs, axis=0)

        def compute_mask(self, inputs, mask=None):
            return ops.not_equal(inputs, 0)

    class TemporalSplit(lib.layers.Layer):
        def call(self, inputs):
            return ops.split(inputs, 2, axis=1)

        def compute_mask(self, inputs, mask=None):
            return None if mask is None else ops.split(mask, 2, axis=1)

    class MaskedMean(lib.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.supports_masking = True

        def call(self, inputs, mask=None):
            m = ops.expand_dims(ops.cast(mask, inputs.dtype), -1)
            return ops.sum(inputs * m, axis=1) / ops.maximum(ops.sum(m, axis=1), 1.0)

    return CustomEmbedding, TemporalSplit, MaskedMean


def _build(lib):
    CustomEmbedding, TemporalSplit, MaskedMean = _layers(lib)
    inp = lib.layers.Input((6,), dtype="int32")
    x = CustomEmbedding(10, 3)(inp)
    first, second = TemporalSplit()(x)
    return lib.Model(inp, [MaskedMean()(first), MaskedMean()(second), lib.layers.GlobalAveragePooling1D()(x)])


def test_compute_mask_hooks_reference():
    import flexflow_keras as ff

    model = _build(ff)
    table = model.get_weights()[0]
    got = model.predict(IDS, verbose=0)
    x, m = table[IDS], (IDS != 0).astype("float32")[..., None]

    def mean(xs, ms):
        return (xs * ms).sum(1) / np.maximum(ms.sum(1), 1.0)

    np.testing.assert_allclose(got[0], mean(x[:, :3], m[:, :3]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], mean(x[:, 3:], m[:, 3:]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], (x * m).sum(1) / m.sum(1), rtol=1e-5, atol=1e-6)


@pytest.mark.tf
def test_compute_mask_hooks_match_tf():
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    import flexflow_keras as ff

    ours, theirs = _build(ff), _build(k)
    theirs.set_weights(ours.get_weights())
    for a, b in zip(ours.predict(IDS, verbose=0), theirs(IDS), strict=True):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-6)
