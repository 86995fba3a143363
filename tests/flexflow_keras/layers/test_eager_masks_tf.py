"""Masks on eager calls, as Keras 3 sets them (layers/mask_hooks.py): an eager output carries
``_keras_mask`` (Embedding(mask_zero=True), Masking, a custom compute_mask, a layer that supports masking),
a later eager call taking ``mask`` receives it, and Embedding / Masking have Keras' ``compute_mask``.
keras.io's masking guide prints ``embedding(padded)._keras_mask`` and stopped with "AttributeError:
'EagerTensor' object has no attribute '_keras_mask'" (its MyLayer calls ``self.embedding.compute_mask``).
Against tf.keras 3.15."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(5)
PADDED = np.array([[711, 632, 71, 0, 0, 0], [73, 8, 3215, 55, 927, 0], [83, 91, 1, 645, 1253, 927]], "int32")
FEATS = np.repeat(PADDED[..., None], 4, axis=-1).astype("float32")


def _mask(t):
    return np.asarray(t._keras_mask)


def test_embedding_and_masking_outputs_carry_their_masks_eagerly():
    for lib in (ff, keras_ref):
        emb = lib.layers.Embedding(5000, 8, mask_zero=True)
        np.testing.assert_array_equal(_mask(emb(PADDED)), PADDED != 0)
        np.testing.assert_array_equal(np.asarray(emb.compute_mask(PADDED)), PADDED != 0)
        assert lib.layers.Embedding(10, 2).compute_mask(PADDED) is None
        masking = lib.layers.Masking()
        np.testing.assert_array_equal(_mask(masking(FEATS)), PADDED != 0)
        np.testing.assert_array_equal(np.asarray(masking.compute_mask(FEATS)), PADDED != 0)
        assert getattr(lib.layers.Dense(2)(FEATS), "_keras_mask", None) is None


def _custom_layers(lib):
    class Split(lib.layers.Layer):
        def call(self, inputs):
            return lib.ops.split(inputs, 2, axis=1)

        def compute_mask(self, inputs, mask=None):
            return None if mask is None else lib.ops.split(mask, 2, axis=1)

    class Relu(lib.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.supports_masking = True

        def call(self, inputs):
            return lib.ops.relu(inputs)

    return Split(), Relu()


def test_custom_compute_mask_and_supports_masking_eagerly():
    for lib in (ff, keras_ref):
        split, relu = _custom_layers(lib)
        masked = lib.layers.Masking()(FEATS)
        first, second = split(masked)
        np.testing.assert_array_equal(_mask(first), PADDED[:, :3] != 0)
        np.testing.assert_array_equal(_mask(second), PADDED[:, 3:] != 0)
        np.testing.assert_array_equal(_mask(relu(masked)), PADDED != 0)
        assert getattr(relu(FEATS), "_keras_mask", None) is None


def _lstm_outputs(lib):
    emb, lstm = lib.layers.Embedding(5000, 6, mask_zero=True), lib.layers.LSTM(5)
    emb.build((None, 6))
    lstm.build((None, 6, 6))
    w = np.random.default_rng(1).normal(size=(5000, 6)).astype("float32")
    emb.set_weights([w])
    lstm.set_weights([np.random.default_rng(2 + i).normal(size=v.shape).astype("float32") * 0.4
                      for i, v in enumerate(lstm.get_weights())])
    implicit = np.asarray(lstm(emb(PADDED)))  # the eager output's mask reaches the LSTM
    explicit = np.asarray(lstm(emb(PADDED), mask=emb.compute_mask(PADDED)))
    return implicit, explicit


def test_an_eager_mask_reaches_the_next_eager_call_as_tf_keras():
    got, want = _lstm_outputs(ff), _lstm_outputs(keras_ref)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6, atol=1e-7)
