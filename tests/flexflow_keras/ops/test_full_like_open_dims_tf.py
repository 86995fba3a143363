"""ops.ones_like / zeros_like / full_like of a symbolic tensor with open lengths past the batch
(Input(shape=(None,))) give a tensor of its run-time shape, as tf.keras 3.15; ours stopped with "fill: only
the first dim of shape (None, None) may be None". Deep Learning with Python 3rd ed. ch. 15's
PositionalEmbedding computes positions as ``ops.cumsum(ops.ones_like(inputs), axis=-1) - 1``."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

IDS = np.array([[5, 6, 0], [1, 0, 2]], "int32")
FLOATS = np.array([[1.5, np.nan, np.inf], [0.0, -1.0, 2.0]], "float32")  # NaN and inf still give the fill value


def _outputs(mod):
    x = mod.Input((None,), dtype="int32")
    y = mod.Input((None,), dtype="float32")
    z = mod.Input((None, 2), dtype="float32")
    outs = [mod.ops.cumsum(mod.ops.ones_like(x), axis=-1) - 1, mod.ops.zeros_like(x), mod.ops.full_like(y, 2.5),
            mod.ops.ones_like(y, dtype="bool"), mod.ops.zeros_like(y), mod.ops.full_like(z, -3, dtype="int32")]
    m = mod.Model([x, y, z], outs)
    return m.predict([IDS, FLOATS, np.ones((2, 4, 2), "float32")], verbose=0)


def test_fill_like_over_open_lengths_matches_keras():
    for got, want in zip(_outputs(ff), _outputs(keras_ref), strict=True):
        assert got.shape == want.shape and str(got.dtype) == str(want.dtype)
        np.testing.assert_array_equal(got, want)


def test_positional_embedding_of_the_notebook():
    def build(mod):
        class PositionalEmbedding(mod.Layer):
            def __init__(self, sequence_length, input_dim, output_dim):
                super().__init__()
                self.token_embeddings = mod.layers.Embedding(input_dim, output_dim)
                self.position_embeddings = mod.layers.Embedding(sequence_length, output_dim)

            def call(self, inputs):
                positions = mod.ops.cumsum(mod.ops.ones_like(inputs), axis=-1) - 1
                return self.token_embeddings(inputs) + self.position_embeddings(positions)

        inp = mod.Input(shape=(None,), dtype="int32")
        return mod.Model(inp, PositionalEmbedding(5, 10, 3)(inp))

    ref, ours = build(keras_ref), build(ff)
    ours.set_weights(ref.get_weights())
    np.testing.assert_allclose(ours.predict(IDS, verbose=0), ref.predict(IDS, verbose=0), rtol=1e-6)
