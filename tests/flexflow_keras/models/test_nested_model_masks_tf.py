"""A functional or Sequential model called on symbolic tensors that carry Keras masks runs its layers on them,
as Keras 3 (models/layer_rerun.py): keras.io's neural_machine_translation_with_transformer builds a decoder model on
a plain Input and calls it on the encoder's masked output, and the decoder's cross-attention then masks
the encoder's padding."""

import numpy as np
import pytest

import flexflow_keras as ffk

SRC = np.array([[3, 4, 0, 0], [5, 6, 7, 0]], "int32")
TGT = np.array([[1, 2, 3], [4, 5, 0]], "int32")


def _build(keras):
    src = keras.Input((None,), dtype="int32", name="src")
    encoded = keras.layers.Embedding(10, 4, mask_zero=True)(src)
    encoded = keras.layers.Dense(4, activation="tanh")(encoded)  # supports masking: the mask passes on
    encoder = keras.Model(src, encoded)

    tgt = keras.Input((None,), dtype="int32", name="tgt")
    state = keras.Input((None, 4), name="state")
    x = keras.layers.Embedding(10, 4)(tgt)
    x = keras.layers.MultiHeadAttention(num_heads=2, key_dim=2)(x, state)  # value mask: the state's
    decoder = keras.Model([tgt, state], keras.layers.Dense(3)(x))

    out = decoder([tgt, encoder(src)])
    return keras.Model([src, tgt], out)


def test_the_inner_model_masks_the_outer_padding_without_tf():
    model = _build(ffk)
    before = model.predict([SRC, TGT], verbose=0)
    embedding = model.layers[2].layers[1]  # the encoder's Embedding
    table = embedding.get_weights()[0]
    table[0] += 1.0  # the padding id's vector: only attended to if the cross-attention ignores the mask
    embedding.set_weights([table])
    np.testing.assert_allclose(model.predict([SRC, TGT], verbose=0), before, rtol=1e-6, atol=1e-7)


def test_nested_model_masks_match_tf():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    theirs, ours = _build(keras), _build(ffk)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours.predict([SRC, TGT], verbose=0), theirs.predict([SRC, TGT], verbose=0),
                               rtol=1e-5, atol=1e-6)
    theirs.compile("sgd", "mse")
    ours.compile("sgd", "mse")
    y = np.random.RandomState(0).rand(2, 3, 3).astype("float32")
    for model in (theirs, ours):
        model.fit([SRC, TGT], y, epochs=2, batch_size=2, verbose=0, shuffle=False)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _sequential_inside(keras):
    ids = keras.Input((5,), dtype="int32")
    e = keras.layers.Embedding(10, 3, mask_zero=True)(ids)
    built = keras.Sequential([keras.Input((None, 3)), keras.layers.LSTM(4)])
    lazy = keras.Sequential([keras.layers.GRU(4)])
    return keras.Model(ids, [built(e), lazy(e)])


def test_sequential_inside_masks_as_tf():
    ids = np.array([[1, 2, 3, 0, 0], [4, 0, 0, 0, 0]], "int32")
    ours = _sequential_inside(ffk)
    before = ours.predict(ids, verbose=0)
    embedding = ours.layers[1]
    table = embedding.get_weights()[0]
    table[0] += 1.0  # masked steps: their vector must not reach the recurrent layers
    embedding.set_weights([table])
    for a, b in zip(ours.predict(ids, verbose=0), before, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    theirs = _sequential_inside(keras)
    ours.set_weights(theirs.get_weights())
    for a, b in zip(ours.predict(ids, verbose=0), theirs.predict(ids, verbose=0), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
