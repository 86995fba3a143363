"""MultiHeadAttention's and GroupQueryAttention's projections are saved and loaded where tf.keras 3.15 keeps
them (``<layer>/query_dense/vars`` under MHA's public properties, ``<layer>/_query_dense/vars`` for GQA):
they were left out of .weights.h5 and .keras files altogether (weights_io.walk visits public attributes, and
the projections are private), so keras.io's ViT restored its best checkpoint with the attention weights of
the last epoch, and a tf.keras file loaded without its attention weights, silently."""

import h5py
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402

pytestmark = pytest.mark.tf
RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 8)).astype(np.float32)


def _model(k, kind):
    inp = k.Input((4, 8))
    if kind == "mha":
        x = k.layers.MultiHeadAttention(num_heads=2, key_dim=3)(inp, inp)
    elif kind == "gqa":
        x = k.layers.GroupQueryAttention(head_dim=4, num_query_heads=2, num_key_value_heads=1)(inp, inp)
    else:  # inside a custom layer's attribute, as keras.io's TransformerBlock holds it
        class Block(k.layers.Layer):
            def __init__(self):
                super().__init__()
                self.att = k.layers.MultiHeadAttention(num_heads=2, key_dim=3)

            def call(self, x):
                return self.att(x, x) + x
        x = Block()(inp)
    return k.Model(inp, k.layers.Dense(2)(x))


def _datasets(path):
    names = {}
    with h5py.File(path) as f:
        f.visititems(lambda n, o: names.__setitem__(n, o.shape) if isinstance(o, h5py.Dataset) else None)
    return names


@pytest.mark.parametrize("kind", ["mha", "gqa", "nested"])
def test_files_interchange_with_tf_keras(tmp_path, kind):
    theirs, ours = _model(tf.keras, kind), _model(keras, kind)
    ours.set_weights([(0.3 * RNG.standard_normal(w.shape)).astype(np.float32) for w in theirs.get_weights()])
    ours.save_weights(tmp_path / "ff.weights.h5")
    theirs.save_weights(tmp_path / "tf.weights.h5")
    assert _datasets(tmp_path / "ff.weights.h5") == _datasets(tmp_path / "tf.weights.h5")
    theirs.load_weights(tmp_path / "ff.weights.h5")
    np.testing.assert_allclose(ours.predict(X, verbose=0), theirs.predict(X, verbose=0), rtol=1e-5, atol=1e-5)
    fresh = _model(keras, kind)
    fresh.load_weights(tmp_path / "ff.weights.h5")
    np.testing.assert_allclose(fresh.predict(X, verbose=0), theirs.predict(X, verbose=0), rtol=1e-5, atol=1e-5)


def test_tf_keras_file_and_keras_archive_load_the_attention_weights(tmp_path):
    theirs = _model(tf.keras, "mha")
    theirs.save_weights(tmp_path / "tf.weights.h5")
    ours = _model(keras, "mha")
    ours.load_weights(tmp_path / "tf.weights.h5")
    want = theirs.predict(X, verbose=0)
    np.testing.assert_allclose(ours.predict(X, verbose=0), want, rtol=1e-5, atol=1e-5)
    ours.save(tmp_path / "m.keras")
    again = keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(again.predict(X, verbose=0), want, rtol=1e-5, atol=1e-5)
