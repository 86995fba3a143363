"""``keras.ops.take(w, ids, axis=0)`` of a trainable 2-D weight trains as on Keras 3's TensorFlow backend:
TensorFlow's gradient of that gather is IndexedSlices (one row per lookup), and Adam's second moment of a
row looked up several times grows by the sum of the lookups' squared gradients, not the square of their
sum (as for an Embedding's table: execution/sparse_moments.py). keras.io's Swin Transformer gathers its
relative position bias table with a repeated index this way; after one AdamW step its table was up to
45% off TensorFlow's (0.0100 moved where TensorFlow moved 0.0188), with no error."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


def _model(K, ids_from):
    class Bias(K.layers.Layer):
        def build(self, input_shape):
            self.table = self.add_weight(shape=(5, 3), name="table")
            self.index = K.Variable(np.array([[0, 4, 4], [-1, 2, 0]]), dtype="int", trainable=False)

        def call(self, x, ids):
            if ids_from == "variable":
                rows = K.ops.take(self.table, K.ops.reshape(self.index, (-1,)), axis=0)  # (6, 3)
                return x + K.ops.reshape(rows, (1, 18))
            return x + K.ops.reshape(K.ops.take(self.table, ids, axis=0), (-1, 18))  # (batch, 6, 3)

    x_in, ids_in = K.Input((18,)), K.Input((6,), dtype="int32")
    return K.Model([x_in, ids_in], K.layers.Dense(2)(Bias()(x_in, ids_in)))


@pytest.mark.parametrize("ids_from", ["variable", "input"])
@pytest.mark.parametrize("opt", ["Adam", "RMSprop"])
def test_rows_taken_from_a_weight_train_as_tf_keras(ids_from, opt):
    rng = np.random.RandomState(0)
    x = rng.rand(8, 18).astype("float32")
    ids = rng.randint(-5, 5, (8, 6)).astype("int32")  # repeats, and negative ids counted from the end
    y = rng.rand(8, 2).astype("float32")
    ref, got = _model(tk, ids_from), _model(ff, ids_from)
    got.set_weights(ref.get_weights())
    np.testing.assert_allclose(got.predict([x, ids], verbose=0), ref.predict([x, ids], verbose=0), rtol=1e-5,
                               atol=1e-6)
    for m, K in ((ref, tk), (got, ff)):
        m.compile(optimizer=getattr(K.optimizers, opt)(0.05), loss="mse")
        m.fit([x, ids], y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(got.get_weights(), ref.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_rows_taken_eagerly_under_a_tape_train_as_tf_keras():
    """A custom loop: GradientTape over take(w, ids) with repeated and negative ids, Adam.apply_gradients."""
    from flexflow_keras.keras_alias import _TensorFlow

    results = []
    for K, T in ((tk, tf), (ff, _TensorFlow("tensorflow"))):
        w = K.Variable(np.arange(15, dtype="float32").reshape(5, 3) / 10)
        opt = K.optimizers.Adam(0.1)
        for _ in range(3):
            with T.GradientTape() as tape:
                loss = K.ops.sum(K.ops.take(w, np.array([0, 4, 4, -1, 2, 0]), axis=0) ** 2)
            opt.apply_gradients(zip(tape.gradient(loss, [w]), [w], strict=True))
        results.append(np.asarray(w.numpy()))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6, atol=1e-7)
