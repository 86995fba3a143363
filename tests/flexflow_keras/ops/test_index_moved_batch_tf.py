"""Indexing a symbolic tensor whose batch dim a transpose moved off axis 0: keras.io's Swin Transformer
(WindowAttention) transposes its (batch, tokens, 3, heads, head_dim) projection to put q/k/v first and
takes ``x[0], x[1], x[2]``; it stopped on "slice: indexing needs known per-sample dims, received
(3, None, ...)". The batch may be taken whole at any position; the index is compared with tf.keras
(predictions, two epochs of SGD, and a data-parallel split of the batch)."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras.errors import ShapeError  # noqa: E402

pytestmark = pytest.mark.tf


def _model(K):
    class QKV(K.layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.qkv = K.layers.Dense(12)

        def call(self, x):
            _, n, c = x.shape
            x = K.ops.reshape(self.qkv(x), (-1, n, 3, 2, 2))
            x = K.ops.transpose(x, (2, 0, 3, 1, 4))  # (3, batch, heads, n, head_dim)
            q, k, v = x[0], x[1], x[2]
            w = K.ops.softmax(q @ K.ops.transpose(k, (0, 1, 3, 2)), axis=-1)
            y = K.ops.transpose(w @ v, (0, 2, 1, 3))
            kv = K.ops.sum(x[1:, :, 0, :, :], axis=0)  # k + v of head 0: (batch, n, 2)
            return K.ops.concatenate([K.ops.reshape(y, (-1, n, 4)), kv], axis=-1)

    inp = K.Input((5, 4))
    return K.Model(inp, K.layers.Dense(3)(QKV()(inp)))


X = np.random.RandomState(0).rand(8, 5, 4).astype("float32")
Y = np.random.RandomState(1).rand(8, 5, 3).astype("float32")


@pytest.mark.parametrize("degree", [1, 2])
def test_index_of_a_transposed_batch_trains_as_tf_keras(degree, request):
    ff.config.set(only_data_parallel=True, cpus=2, data_parallel_degree=degree)
    request.addfinalizer(ff.config.reset)
    ref, got = _model(tk), _model(ff)
    rng = np.random.RandomState(2)
    ws = [rng.randn(*np.shape(w)).astype("float32") * 0.5 for w in ref.get_weights()]
    ref.set_weights(ws)
    got.set_weights(ws)
    np.testing.assert_allclose(got.predict(X, verbose=0), ref.predict(X, verbose=0), rtol=1e-5, atol=1e-6)
    for m, K in ((ref, tk), (got, ff)):
        m.compile(optimizer=K.optimizers.SGD(0.1), loss="mse")
    h_ref = ref.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    h_got = got.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h_got, h_ref, rtol=1e-5)
    for a, b in zip(got.get_weights(), ref.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_index_that_cuts_a_moved_batch_is_refused():
    x = ff.ops.transpose(ff.Input((3, 4)), (1, 0, 2))  # (3, None, 4)
    with pytest.raises(ShapeError, match=r"keeps its batch dim \(axis 1\) whole"):
        x[:, 0]
