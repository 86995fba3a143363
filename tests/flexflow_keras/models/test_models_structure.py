"""Sequential, functional, subclassed, nested and shared-layer models: structure, `_op_graph`, eager calls."""

import numpy as np
import pytest

from flexflow_keras import layers, models, ops
from flexflow_keras.errors import GraphError, ShapeError
from flexflow_keras.ops.graph import OpGraph, TensorSpec

rng = np.random.default_rng(0)
DENSE = ops.dense(layers.Input((2,)), np.ones((2, 2), "float32")).node.op.type_name
DROPOUT = ops.dropout(layers.Input((2,)), 0.5).node.op.type_name


def mlp_seq():
    return models.Sequential([layers.Input((8,)), layers.Dense(16, activation="relu"), layers.Dropout(0.1),
                              layers.Dense(3, activation="softmax")])


def test_sequential_structure_and_graph():
    m = mlp_seq()
    assert [la.name for la in m.layers] == ["dense", "dropout", "dense_1"]
    assert m.input_names == ["input_layer"] and m.output_names == ["dense_1"]
    assert m.inputs[0].shape == (None, 8) and m.outputs[0].shape == (None, 3)
    g = m._op_graph()
    assert isinstance(g, OpGraph) and g is m._op_graph([TensorSpec((None, 8))])
    assert [n.op.type_name for n in g.nodes] == [DENSE, DROPOUT, DENSE, "softmax"]
    assert [w.path for w in m.weights] == ["sequential/dense/kernel", "sequential/dense/bias",
                                           "sequential/dense_1/kernel", "sequential/dense_1/bias"]
    assert m.count_params() == 8 * 16 + 16 + 16 * 3 + 3
    x = rng.standard_normal((5, 8)).astype("float32")
    y = m(x)
    assert y.shape == (5, 3)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, rtol=1e-5)
    with pytest.raises(ShapeError, match=r"Input 0 of layer 'sequential' is incompatible: expected shape \(None, 8\), "
                                         r"got shape \(5, 2, 4\)\. Reshape the data with x.reshape\(-1, 8\)\?"):
        m(x.reshape(5, 2, 4))
    with pytest.raises(ShapeError, match="expects samples of shape"):
        m._op_graph([TensorSpec((None, 9))])


def test_sequential_input_shape_kwarg_add_pop_and_deferred_build():
    m = models.Sequential()
    m.add(layers.Dense(4, input_shape=(6,)))
    m.add(layers.Dense(2))
    assert m.built and m.inputs[0].shape == (None, 6) and m.outputs[0].shape == (None, 2)
    popped = m.pop()
    assert popped.name == "dense_1" and m.outputs[0].shape == (None, 4) and len(m.weights) == 2
    with pytest.raises(ValueError, match="unique names"):
        m.add(layers.Dense(3, name="dense"))
    assert [la.name for la in m.layers] == ["dense"]

    d = models.Sequential([layers.Dense(4), layers.Dense(2)])
    assert not d.built and d.weights == [] and d.inputs == []
    with pytest.raises(ValueError, match="has no input shape yet"):
        d._op_graph()
    g = d._op_graph([TensorSpec((None, 7))])
    assert d.built and [w.shape for w in d.weights] == [(7, 4), (4,), (4, 2), (2,)]
    assert g.inputs[0].shape == (None, 7)

    e = models.Sequential([layers.Dense(3)])
    assert e(np.ones((2, 5), "float32")).shape == (2, 3) and e.built

    f = models.Sequential([layers.Dense(3)])
    f.build((None, 4))
    assert f.layers[0].kernel.shape == (4, 3)


def test_sequential_add_failure_leaves_the_model_unchanged():
    m = models.Sequential([layers.Input((4,)), layers.Dense(3)])
    with pytest.raises(ShapeError):
        m.add(layers.Conv2D(2, 3))
    assert len(m.layers) == 1 and m.outputs[0].shape == (None, 3)


def test_functional_multi_input_output():
    a = layers.Input((6,), name="a")
    b = layers.Input((4,), name="b")
    h = layers.concatenate([layers.Dense(5, name="da")(a), layers.Dense(5, name="db")(b)])
    out1 = layers.Dense(2, activation="softmax", name="cls")(h)
    out2 = layers.Dense(1, name="reg")(h)
    m = models.Model(inputs=[a, b], outputs=[out1, out2])
    assert type(m).__name__ == "Functional" and isinstance(m, models.Model)
    assert m.input_names == ["a", "b"] and m.output_names == ["cls", "reg"]
    assert [la.name for la in m.layers] == ["a", "b", "da", "db", "concatenate", "cls", "reg"]
    g = m._op_graph()
    assert [t.name for t in g.inputs] == ["a", "b"] and len(g.outputs) == 2
    xa, xb = rng.standard_normal((3, 6)).astype("float32"), rng.standard_normal((3, 4)).astype("float32")
    y1, y2 = m([xa, xb])
    assert y1.shape == (3, 2) and y2.shape == (3, 1)
    y1d, _ = m({"a": xa, "b": xb})
    np.testing.assert_array_equal(y1, y1d)
    with pytest.raises(ShapeError, match=r"expects 2 input\(s\)"):
        m(xa)


def test_functional_disconnected_graph_is_an_error():
    a, b = layers.Input((3,)), layers.Input((3,))
    y = layers.add([a, b])
    with pytest.raises(GraphError, match="not among the model's inputs"):
        models.Model(a, y)


def test_shared_layer_and_nested_model():
    shared = layers.Dense(4, name="shared")
    x1, x2 = layers.Input((5,), name="x1"), layers.Input((5,), name="x2")
    m = models.Model([x1, x2], layers.add([shared(x1), shared(x2)]))
    assert len(m.weights) == 2
    assert [n.op.type_name for n in m._op_graph().nodes] == [DENSE, DENSE, "add"]
    v1, v2 = rng.standard_normal((2, 5)).astype("float32"), rng.standard_normal((2, 5)).astype("float32")
    k, bias = shared.get_weights()
    np.testing.assert_allclose(m([v1, v2]), v1 @ k + v2 @ k + 2 * bias, rtol=1e-5, atol=1e-6)

    inner = models.Sequential([layers.Input((5,)), layers.Dense(3, activation="relu")], name="inner")
    z = layers.Input((5,))
    outer = models.Model(z, layers.Dense(1)(inner(z)))
    assert [la.name for la in outer.layers][1] == "inner"
    assert len(outer.weights) == 4 and outer.weights[0] is inner.weights[0]
    ref = np.maximum(v1 @ inner.weights[0].numpy() + inner.weights[1].numpy(), 0) @ outer.weights[2].numpy() \
        + outer.weights[3].numpy()
    np.testing.assert_allclose(outer(v1), ref, rtol=1e-5, atol=1e-6)
    # a nested model used twice shares its weights
    twice = models.Model(z, layers.add([inner(z), inner(z)]))
    np.testing.assert_allclose(twice(v1), 2 * inner(v1), rtol=1e-6)


def test_ops_between_layers_become_pseudo_layers():
    x = layers.Input((4,))
    h = layers.Dense(4)(x)
    y = layers.Dense(1)(h * 2.0)
    m = models.Model(x, y)
    assert [la.name for la in m.layers] == ["input_layer", "dense", "dense_1"]
    assert len(m._operations) == 4
    d0, d1 = m.layers[1], m.layers[2]
    v = rng.standard_normal((2, 4)).astype("float32")
    ref = ((v @ d0.kernel.numpy() + d0.bias.numpy()) * 2) @ d1.kernel.numpy() + d1.bias.numpy()
    np.testing.assert_allclose(m(v), ref, rtol=1e-5, atol=1e-6)


class MLP(models.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(8, activation="relu")
        self.dropout = layers.Dropout(0.3)
        self.out = layers.Dense(2)

    def call(self, inputs, training=False):
        return self.out(self.dropout(self.hidden(inputs), training=training))


class TwoTower(models.Model):
    def __init__(self):
        super().__init__(name="towers")
        self.left = layers.Dense(3)
        self.right = layers.Dense(3)

    def call(self, inputs):
        a, b = inputs
        return {"sum": layers.add([self.left(a), self.right(b)]), "left": self.left(a)}


def test_subclassed_model_traces_on_first_use():
    m = MLP()
    assert m.name == "mlp" and not m.built and [la.name for la in m.layers] == ["dense", "dropout", "dense_1"]
    with pytest.raises(ValueError, match="has not been built yet"):
        m._op_graph()
    g = m._op_graph([TensorSpec((None, 5))])
    assert g is m._op_graph([TensorSpec((None, 5))]) and g is m._op_graph()
    assert [n.op.type_name for n in g.nodes] == [DENSE, DROPOUT, DENSE]
    assert [n.layer.name for n in g.nodes] == ["dense", "dropout", "dense_1"]
    assert m.input_names == ["mlp_input"] and m.output_names == ["output"]
    assert [w.path for w in m.weights] == ["mlp/dense/kernel", "mlp/dense/bias", "mlp/dense_1/kernel",
                                           "mlp/dense_1/bias"]
    v = rng.standard_normal((3, 5)).astype("float32")
    hidden, out = m.hidden, m.out
    ref = np.maximum(v @ hidden.kernel.numpy() + hidden.bias.numpy(), 0) @ out.kernel.numpy() + out.bias.numpy()
    np.testing.assert_allclose(m(v), ref, rtol=1e-5, atol=1e-6)


def test_subclassed_eager_first_and_multi_input_dict_output():
    m = MLP()
    assert m(np.ones((2, 4), "float32")).shape == (2, 2) and m.built
    t = TwoTower()
    g = t._op_graph([TensorSpec((None, 2)), TensorSpec((None, 3))])
    assert len(g.inputs) == 2 and len(g.outputs) == 2 and t.output_names == ["sum", "left"]
    out = t([np.ones((1, 2), "float32"), np.ones((1, 3), "float32")])
    assert set(out) == {"sum", "left"} and out["sum"].shape == (1, 3)


def test_subclass_calling_functional_init():
    class Wrapped(models.Model):
        def __init__(self):
            x = layers.Input((3,))
            super().__init__(x, layers.Dense(2)(x), name="wrapped")

        def extra(self):
            return "ok"

    w = Wrapped()
    assert w.name == "wrapped" and w.extra() == "ok" and len(w.weights) == 2
    assert w(np.ones((1, 3), "float32")).shape == (1, 2)


def test_get_layer_and_trainable():
    m = mlp_seq()
    assert m.get_layer("dropout") is m.layers[1] and m.get_layer(index=-1) is m.layers[2]
    with pytest.raises(ValueError, match=r"No such layer: nope\. Existing layers are: \['dense', 'dropout', 'dense_1'\]"):
        m.get_layer("nope")
    with pytest.raises(ValueError, match="has only 3 layers"):
        m.get_layer(index=3)
    m.layers[0].trainable = False
    assert len(m.trainable_weights) == 2 and len(m.non_trainable_weights) == 2
    m.trainable = False
    assert m.trainable_weights == [] and all(not w.trainable for w in m.weights)
    m.trainable = True
    assert len(m.trainable_weights) == 4


def test_get_set_weights_round_trip_and_errors():
    m, n = mlp_seq(), mlp_seq()
    n.set_weights(m.get_weights())
    for a, b in zip(m.get_weights(), n.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=r"set_weights\(\) on model 'sequential' expects 4 arrays"):
        m.set_weights(m.get_weights()[:3])
    bad = m.get_weights()
    bad[2] = bad[2].T
    with pytest.raises(ValueError, match=r"weight 2 is 'sequential/dense_1/kernel' \(of layer 'dense_1'\) with shape \(16, 3\)"):
        m.set_weights(bad)


def test_sequential_config_round_trip():
    m = models.Sequential([layers.Input((6,)), layers.Dense(4, activation="relu"), layers.Dropout(0.5),
                           layers.Dense(2)])
    clone = models.Sequential.from_config(m.get_config())
    assert [type(la) for la in clone.layers] == [type(la) for la in m.layers]
    assert clone.inputs[0].shape == (None, 6)
    clone.set_weights(m.get_weights())
    v = rng.standard_normal((2, 6)).astype("float32")
    np.testing.assert_allclose(clone(v), m(v), rtol=1e-6)


def test_integer_data_for_float_layers_and_ids_for_embedding():
    d = models.Sequential([layers.Flatten(), layers.Dense(3)])
    g = d._op_graph([TensorSpec((None, 4, 4), "uint8")])
    assert g.inputs[0].dtype == "float32"
    e = models.Sequential([layers.Embedding(10, 2), layers.Flatten(), layers.Dense(1)])
    assert e._op_graph([TensorSpec((None, 3), "int64")]).inputs[0].dtype == "int64"
    m = MLP()
    g = m._op_graph([TensorSpec((None, 5), "int32")])
    assert g.nodes[0].op.type_name == "cast" and g.nodes[1].inputs[0].dtype == "float32"
    v = np.arange(10).reshape(2, 5).astype("int32")
    np.testing.assert_allclose(m(v), m(v.astype("float32")), rtol=1e-6)
    x = layers.Input((3,), dtype="int32")
    assert layers.Dense(2)(x).dtype == "float32"


def test_model_call_training_flag_reaches_dropout():
    m = models.Sequential([layers.Input((64,)), layers.Dropout(0.5, seed=1)])
    ones = np.ones((8, 64), "float32")
    np.testing.assert_array_equal(m(ones), ones)
    dropped = m(ones, training=True)
    assert 0.3 < float(np.mean(dropped == 0)) < 0.7


def test_frozen_batch_normalization_uses_moving_statistics():
    m = models.Sequential([layers.Input((3,)), layers.BatchNormalization()])
    bn = m.layers[0]
    g = m._op_graph()
    assert g.nodes[0].op.training is None
    bn.trainable = False
    frozen = m._op_graph()
    assert frozen is not g and frozen.nodes[0].op.training is False and frozen is m._op_graph()
    x = rng.standard_normal((16, 3)).astype("float32") * 5 + 3
    np.testing.assert_allclose(m(x, training=True), x / np.sqrt(1 + 1e-3), rtol=1e-5)
    bn.trainable = True
    assert m._op_graph() is g


def test_functional_layer_names_must_be_unique():
    a, b = layers.Input((2,), name="x"), layers.Input((2,), name="x")
    with pytest.raises(ValueError, match=r"the names \['x'\] are used by more than one layer"):
        models.Model([a, b], layers.add([a, b]))


def test_subclassed_model_used_as_a_layer():
    inner = MLP()
    x = layers.Input((5,), name="feat")
    outer = models.Model(x, layers.Dense(1, name="head")(inner(x)))
    assert [la.name for la in outer.layers] == ["feat", "mlp", "head"]
    assert len(outer.weights) == 6 and outer.weights[0] is inner.hidden.kernel
    v = rng.standard_normal((2, 5)).astype("float32")
    head = outer.get_layer("head")
    np.testing.assert_allclose(outer(v), inner(v) @ head.kernel.numpy() + head.bias.numpy(), rtol=1e-5, atol=1e-6)


def test_model_input_and_output_are_the_graphs_tensors():
    """Keras' `model.input` / `model.output` (tensor, list or dict as given), the handles of the classic
    recipes: a new head on `base.output`, Grad-CAM's Model(model.inputs, [layer.output, model.output])."""
    seq = models.Sequential([layers.Input((4,)), layers.Dense(3, name="h"), layers.Dense(2)])
    assert seq.input is seq.inputs[0] and seq.output is seq.outputs[0]
    head = models.Model(seq.input, layers.Dense(5)(seq.output))
    assert head.output_shape == (None, 5) and head.predict(np.ones((2, 4)), verbose=0).shape == (2, 5)
    both = models.Model(seq.inputs, [seq.get_layer("h").output, seq.output])
    assert [o.shape for o in both.predict(np.ones((2, 4)), verbose=0)] == [(2, 3), (2, 2)]
    a, b = layers.Input((3,), name="a"), layers.Input((2,), name="b")
    joined = layers.Concatenate()([a, b])
    assert models.Model([a, b], [joined, joined]).input == [a, b]
    single = layers.Dense(2)(a)
    assert models.Model([a], [single]).output == [single]  # a list of one stays a list, as Keras 3
    assert models.Model({"a": a, "b": b}, joined).input == {"a": a, "b": b}
    with pytest.raises(AttributeError, match="no defined output yet"):
        models.Sequential([layers.Dense(2)]).output  # noqa: B018


def test_nested_sequential_input_and_output_are_its_call_in_the_outer_graph():
    """As Keras 3: a Sequential called as a layer answers `input` / `output` with that call's tensors, so a
    feature model on it (keras.io's cct inspecting its `data_augmentation` stage) is built from the outer
    input; it raised GraphError reading the Sequential's own input_layer. A Functional keeps its own tensors."""
    for first in ([], [layers.Input((4,))]):
        aug = models.Sequential(first + [layers.Rescaling(0.5), layers.Dense(3)])
        inp = layers.Input((4,))
        model = models.Model(inp, layers.Dense(2)(aug(inp)))
        assert aug.input is inp and aug.output is model.layers[1].output
        x = rng.normal(size=(2, 4)).astype("float32")
        kernel, bias = aug.layers[-1].get_weights()
        got = models.Model(model.inputs, aug.output).predict(x, verbose=0)
        np.testing.assert_allclose(got, (0.5 * x) @ kernel + bias, rtol=1e-6, atol=1e-6)
    fi = layers.Input((4,))
    fo = layers.Dense(3)(fi)
    f = models.Model(fi, fo)
    outer = layers.Input((4,))
    models.Model(outer, layers.Dense(2)(f(outer)))
    assert f.output is fo and f.input is fi
