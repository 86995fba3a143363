"""keras.io transformer idioms over lengths unknown while the graph is built (ops/dynamic_dims.py): a
positional embedding ``ops.arange(0, ops.shape(x)[-1])`` on Input(shape=(None,)), and a causal mask reshaped
with ``ops.shape(x)[1]`` and tiled over the batch with ``ops.concatenate([ops.expand_dims(batch_size, -1),
[1, 1]])``: the model builds, trains at one length, predicts at another, and computes what Keras computes."""

import numpy as np
import pytest

import flexflow_keras as ff


def _classes(keras, idiom=True):
    layers, ops = keras.layers, keras.ops

    class PositionalEmbedding(layers.Layer):
        def __init__(self, vocab, maxlen, dim, **kwargs):
            super().__init__(**kwargs)
            self.tokens = layers.Embedding(vocab, dim)
            self.positions = layers.Embedding(maxlen, dim)

        def call(self, x):
            length = ops.shape(x)[-1]
            return self.tokens(x) + self.positions(ops.arange(0, length, 1))

    class CausalAttention(layers.Layer):
        def __init__(self, dim, **kwargs):
            super().__init__(**kwargs)
            self.att = layers.MultiHeadAttention(num_heads=2, key_dim=dim)

        def call(self, x):
            if not idiom:  # Keras' own causal mask (its TensorFlow backend cannot tile by the mult vector)
                return self.att(x, x, use_causal_mask=True)
            shape = ops.shape(x)
            batch_size, n = shape[0], shape[1]
            i = ops.arange(n)[:, None]
            j = ops.arange(n)
            mask = ops.cast(i >= j, dtype="int32")
            mask = ops.reshape(mask, (1, shape[1], shape[1]))
            mult = ops.concatenate([ops.expand_dims(batch_size, -1), ops.convert_to_tensor([1, 1])], axis=0)
            return self.att(x, x, attention_mask=ops.tile(mask, mult))

    return PositionalEmbedding, CausalAttention


def _model(keras, idiom=True):
    PositionalEmbedding, CausalAttention = _classes(keras, idiom)
    inp = keras.Input(shape=(None,), dtype="int64")
    h = CausalAttention(4)(PositionalEmbedding(20, 12, 4)(inp))
    return keras.Model(inp, keras.layers.Dense(20)(h))


def test_the_model_trains_and_predicts_at_other_lengths():
    ff.utils.set_random_seed(0)
    model = _model(ff)
    model.compile(ff.optimizers.Adam(0.01), ff.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = np.random.default_rng(0).integers(1, 20, (32, 6))
    hist = model.fit(x, np.roll(x, -1, axis=1), epochs=4, batch_size=8, verbose=0).history["loss"]
    assert hist[-1] < hist[0]
    short = x[:3, :4]
    out = model.predict(short, verbose=0)
    assert out.shape == (3, 4, 20)
    # causal: the first 4 positions do not see what follows them
    np.testing.assert_allclose(model.predict(x[:3], verbose=0)[:, :4], out, rtol=1e-4, atol=1e-5)


def test_it_computes_what_keras_computes():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, ours_causal, theirs = _model(ff), _model(ff, idiom=False), _model(keras, idiom=False)
    theirs.set_weights(ours.get_weights())
    ours_causal.set_weights(ours.get_weights())
    x = np.random.default_rng(1).integers(1, 20, (2, 5))
    want = theirs.predict(x, verbose=0)
    np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_causal.predict(x, verbose=0), want, rtol=1e-4, atol=1e-5)  # open-length causal


def test_batch_repeats_and_their_limits():
    ops = ff.ops
    inp = ff.Input((5, 3))
    batch, n = ops.shape(inp)[0], ops.shape(inp)[1]
    base = ops.reshape(ops.cast(ops.arange(5)[:, None] >= ops.arange(5), "float32"), (1, 5, 5))
    for y in (ops.tile(base, (batch, 1, 1)), ops.broadcast_to(base, (batch, n, n)), ops.repeat(base, batch, axis=0)):
        assert tuple(y.shape) == (None, 5, 5)
        model = ff.Model(inp, y)
        np.testing.assert_array_equal(model.predict(np.ones((3, 5, 3)), verbose=0), np.tril(np.ones((3, 5, 5))))
    with pytest.raises(ValueError, match="first dim is 1"):
        ops.tile(ops.ones((2, 5)), (batch, 1))
    seq = ff.Input((None, 3))
    with pytest.raises(ValueError, match="size 1"):
        ops.reshape(ops.arange(0, ops.shape(seq)[1]), (2, ops.shape(seq)[1]))
    with pytest.raises(TypeError, match="open"):
        int(ops.shape(seq)[1])


def _encoder(keras):
    layers, ops = keras.layers, keras.ops

    class Enc(layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.att = layers.MultiHeadAttention(num_heads=2, key_dim=4)
            self.supports_masking = True

        def call(self, inputs, mask=None):
            padding_mask = ops.cast(mask[:, None, :], dtype="int32") if mask is not None else None
            return self.att(query=inputs, value=inputs, key=inputs, attention_mask=padding_mask)

    inp = keras.Input(shape=(None,), dtype="int64")
    return keras.Model(inp, layers.Dense(3)(Enc()(layers.Embedding(20, 4, mask_zero=True)(inp))))


def test_a_padding_mask_of_open_length_indexed_with_new_axes():
    x = np.array([[3, 4, 5, 0, 0], [1, 2, 0, 0, 0]])
    ours = _encoder(ff)
    assert ours.predict(x, verbose=0).shape == (2, 5, 3)
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    theirs = _encoder(keras)
    theirs.set_weights(ours.get_weights())
    real = x != 0  # (Keras' TensorFlow backend does not give the query's mask to an attention inside a layer's
    # call, so its padded query steps attend anyway; the loss never reads them)
    np.testing.assert_allclose(ours.predict(x, verbose=0)[real], theirs.predict(x, verbose=0)[real], rtol=1e-4,
                               atol=1e-5)


def test_arithmetic_on_an_unknown_dim_says_why():
    """keras.io's traffic forecasting multiplies the batch (moved to dim 1 by a transpose) by the node count
    for a reshape; it met a bare "unsupported operand type(s) for *: 'SeqDim' and 'int'"."""
    x = ff.ops.transpose(ff.Input((5, 4)), (1, 0, 2))
    with pytest.raises(TypeError, match=r"ops.shape\(x\)\[1\] .* arithmetic on it \(None and 4\) is not supported"):
        ff.ops.shape(x)[1] * 4
    with pytest.raises(TypeError, match=r"ops.shape\(x\)\[0\] .*the batch size.* arithmetic on it"):
        2 * ff.ops.shape(ff.Input((3,)))[0]
    with pytest.raises(TypeError, match="Reshape each sample instead"):
        ff.ops.shape(ff.Input((None, 3)))[1] - 1
