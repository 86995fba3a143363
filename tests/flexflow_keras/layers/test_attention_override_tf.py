"""A MultiHeadAttention subclass overriding Keras 3's `_compute_attention` (keras.io's small-data ViT: a
learnable softmax temperature and a masked diagonal) runs its override, with Keras' private names, and
trains as tf.keras does on copied weights; the override was ignored before (and `self._key_dim` raised)."""

import math

import numpy as np
import pytest
from ff_layer_harness import make_data, tf_keras

import flexflow_keras as ff


def lsa_class(lib, variable, with_scores: bool):
    """keras.io's MultiHeadAttentionLSA for `lib` (flexflow_keras or tf.keras); `with_scores` gives the
    override Keras 3.15's signature (tf.keras passes return_attention_scores), else Keras 3.0's."""
    ops = lib.ops

    class LSA(lib.layers.MultiHeadAttention):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.tau = variable(math.sqrt(float(self._key_dim)))

        def _attend(self, query, key, value, attention_mask, training):
            query = ops.multiply(query, 1.0 / self.tau)
            scores = ops.einsum(self._dot_product_equation, key, query)
            scores = self._masked_softmax(scores, attention_mask)
            dropped = self._dropout_layer(scores, training=training)
            return ops.einsum(self._combine_equation, dropped, value), scores

    if with_scores:
        def compute(self, query, key, value, attention_mask=None, training=None, return_attention_scores=False):
            return self._attend(query, key, value, attention_mask, training)
    else:
        def compute(self, query, key, value, attention_mask=None, training=None):
            return self._attend(query, key, value, attention_mask, training)
    LSA._compute_attention = compute
    return LSA


def build(lib, variable, with_scores):
    inp = lib.layers.Input((6, 8))
    mask = (1 - np.eye(6, dtype="int8"))[None]
    h = lsa_class(lib, variable, with_scores)(num_heads=2, key_dim=4)(inp, inp, attention_mask=mask)
    return lib.Model(inp, lib.layers.Dense(1)(lib.layers.Flatten()(h)))


@pytest.mark.tf
@pytest.mark.parametrize("with_scores", [True, False], ids=["keras3.15_signature", "keras3.0_signature"])
def test_an_overriding_compute_attention_trains_as_tf_keras(request, with_scores):
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    import tensorflow as tf

    x, y = make_data((8, 6, 8)), make_data((8, 1), seed=7)
    from flexflow_keras.keras_alias import _TensorFlow

    # keras.io's script makes tau a raw tf.Variable: on TensorFlow it is not one of the layer's Keras weights
    # (8 of the attention, 2 of the Dense) and fit does not train it; the runner's tf.Variable is the same
    ours = build(ff, lambda v: _TensorFlow("tensorflow").Variable(v, trainable=True), with_scores)
    theirs = build(k, lambda v: tf.Variable(v, trainable=True), True)
    assert len(ours.weights) == len(theirs.weights) == 10
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    ff.config.set(only_data_parallel=True)
    request.addfinalizer(ff.config.reset)
    ours.compile(optimizer=ff.optimizers.SGD(0.1), loss="mse")
    theirs.compile(optimizer=k.optimizers.SGD(0.1), loss="mse")
    h_ours = ours.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False).history["loss"]
    h_theirs = theirs.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False).history["loss"]
    np.testing.assert_allclose(h_ours, h_theirs, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_the_override_is_what_runs():
    """An override scaling the scores differently changes the output (it was silently ignored)."""
    class Flat(ff.layers.MultiHeadAttention):
        def _compute_attention(self, query, key, value, attention_mask=None, training=None,
                               return_attention_scores=False):
            scores = ff.ops.einsum(self._dot_product_equation, key, query) * 0.0  # uniform attention
            scores = self._masked_softmax(scores, attention_mask)
            return ff.ops.einsum(self._combine_equation, scores, value), scores

    x = make_data((2, 5, 4))
    plain = ff.layers.MultiHeadAttention(num_heads=1, key_dim=3)
    flat = Flat(num_heads=1, key_dim=3)
    plain(x, x)
    flat(x, x)
    flat.set_weights(plain.get_weights())
    wq, bq, wk, bk, wv, bv, wo, bo = flat.get_weights()
    v = np.einsum("btd,dhk->bthk", x, wv) + bv
    want = np.einsum("bthk,hko->bto", np.broadcast_to(v.mean(1, keepdims=True), v.shape), wo) + bo
    np.testing.assert_allclose(np.asarray(flat(x, x)), want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(np.asarray(plain(x, x)), want, atol=1e-4)
