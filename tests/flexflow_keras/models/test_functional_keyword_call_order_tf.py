"""A functional model whose layers are called with keyword arguments (``Decoder()(target=y, source=x,
source_mask=m)``) lists its layers and weights in Keras 3's order: a node's inputs are its arguments
flattened with keywords by sorted name (Keras' SymbolicArguments), which sets the traversal behind
``model.layers`` and ``get_weights()``. Ours took the inputs in call order (target first), so Deep Learning
with Python 3rd ed. ch. 15's Transformer listed both Embeddings before the encoder and
``set_weights(tf_model.get_weights())`` failed on the second weight's shape."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


def _model(mod):
    layers = mod.layers

    class Enc(mod.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.d = layers.Dense(4)

        def call(self, source, source_mask):
            return self.d(source) * mod.ops.cast(source_mask, "float32")[..., None]

    class Dec(mod.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.d = layers.Dense(4)

        def call(self, target, source, source_mask):
            return self.d(target) + mod.ops.mean(source, axis=1, keepdims=True)

    source = mod.Input(shape=(None,), dtype="int32", name="english")
    x = layers.Embedding(10, 4, name="emb_src")(source)
    enc = Enc(name="enc")(source=x, source_mask=source != 0)
    target = mod.Input(shape=(None,), dtype="int32", name="spanish")
    y = layers.Embedding(10, 4, name="emb_tgt")(target)
    y = Dec(name="dec")(target=y, source=enc, source_mask=source != 0)
    out = layers.Dense(3, name="head")(y)
    return mod.Model([source, target], out)


def test_layers_and_weights_in_keras_order():
    ref, ours = _model(keras_ref), _model(ff)
    assert [la.name for la in ours.layers] == [la.name for la in ref.layers]
    assert [w.shape for w in ours.get_weights()] == [w.shape for w in ref.get_weights()]
    ours.set_weights(ref.get_weights())
    src = np.array([[1, 2, 0], [3, 0, 0]], "int32")
    tgt = np.array([[4, 5, 6, 7], [8, 9, 1, 0]], "int32")
    np.testing.assert_allclose(ours.predict([src, tgt], verbose=0), ref.predict([src, tgt], verbose=0),
                               rtol=1e-5, atol=1e-6)


def test_positional_call_order_unchanged():
    """Positional arguments keep their order (Keras' flatten of args): the first argument's layer first."""
    names = []
    for mod in (ff, keras_ref):
        a, b = mod.Input((2,), name="a"), mod.Input((2,), name="b")
        da, db = mod.layers.Dense(2, name="da")(a), mod.layers.Dense(2, name="db")(b)
        m = mod.Model([a, b], mod.layers.Add(name="add")([db, da]))
        names.append([la.name for la in m.layers])
    assert names[0] == names[1] == ["b", "a", "db", "da", "add"]
