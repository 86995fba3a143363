"""``reshape(x, (B, N, 3, h, d))`` with B and N read from ``ops.shape(x)`` of an ``Input((None, 24))``: the
known dims regroup while the open length carries over, as keras.io's CaiT splits attention heads
(``tf.reshape(qkv, (B, N, 3, num_heads, C // num_heads))`` over a variable token count). It raised
"a reshape can only add or remove dims of size 1"; Keras 3 builds it and runs at every length."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import layers, ops
from flexflow_keras.errors import ShapeError

tf = pytest.importorskip("tensorflow")


def _heads(K, x):
    b, n = K.shape(x)[0], K.shape(x)[1]
    y = K.reshape(x, (b, n, 3, 2, 4))
    y = K.transpose(y, (0, 2, 3, 1, 4))  # (B, 3, heads, N, d)
    return K.reshape(K.sum(y, axis=(1, 2)), (b, n, 4)) * 2.0  # back to (B, N, d) by the same rule


def test_regrouping_known_dims_around_an_open_length_matches_keras():
    inp = keras.Input((None, 24))
    out = layers.Lambda(lambda t: _heads(ops, t))(inp)
    assert tuple(out.shape) == (None, None, 4)
    kin = tf.keras.Input((None, 24))
    kout = tf.keras.layers.Lambda(lambda t: _heads(tf.keras.ops, t))(kin)
    assert tuple(kout.shape) == (None, None, 4)
    model, kmodel = keras.Model(inp, out), tf.keras.Model(kin, kout)
    for length in (3, 5):
        data = np.random.default_rng(length).normal(size=(2, length, 24)).astype(np.float32)
        np.testing.assert_allclose(model.predict(data, verbose=0), kmodel.predict(data, verbose=0), rtol=1e-5,
                                   atol=1e-6)


def test_a_different_product_is_still_refused_with_the_rule():
    inp = keras.Input((None, 24))
    with pytest.raises(ShapeError, match="same product"):
        ops.reshape(inp, (ops.shape(inp)[0], ops.shape(inp)[1], 5, 5))
