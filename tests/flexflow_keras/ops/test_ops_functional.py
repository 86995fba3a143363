"""The functional op API: symbolic recording on KerasTensors, eager runs on arrays, argument conversion."""

import numpy as np
import pytest

from flexflow_keras import ops
from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import KerasTensor, OpGraph, Variable

rng = np.random.default_rng(9)


def sym(*shape, dtype="float32"):
    return KerasTensor((None,) + shape, dtype)


def var(*shape, name="w"):
    return Variable(name, shape, initializer=rng.standard_normal(shape).astype("float32"))


def test_dense_records_a_dense_node_and_keeps_softmax_separate():
    x = sym(4)
    y = ops.dense(x, var(4, 3), var(3, name="b"), activation="relu")
    assert y.shape == (None, 3) and y.node.op.type_name == "dense" and y.node.op.activation == "relu"
    z = ops.dense(x, var(4, 3), activation="softmax")
    assert z.node.op.type_name == "softmax" and z.node.inputs[0].node.op.activation == "linear"
    w = ops.dense(sym(5, 4), var(4, 2), activation=lambda t: ops.multiply(t, 2.0))
    assert w.shape == (None, 5, 2) and w.node.op.type_name == "scalar"


def test_eager_dense_matches_numpy():
    x, k, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(2)
    np.testing.assert_allclose(ops.dense(x, k, b, activation="tanh"), np.tanh(x @ k + b), rtol=1e-12)
    kv = var(4, 2)
    np.testing.assert_allclose(ops.dense(x.astype("float32"), kv), x.astype("float32") @ kv.numpy(), rtol=1e-5)


def test_operators_and_argument_conversion():
    x, w = sym(4), var(4, 2)
    assert (x + 2).node.op.type_name == "scalar" and not (x + 2).node.op.reverse
    r = 1 - x
    assert r.node.op.reverse and r.node.op.fn == "subtract"
    c = x * np.ones(4, "float32")
    assert c.node.op.type_name == "multiply" and c.node.inputs[1].node.op.type_name == "variable"
    assert not c.node.inputs[1].node.weights[0].trainable
    m = x @ w
    assert m.node.op.type_name == "dense" and m.node.weights == (w,)
    s = x * Variable("s", (4,), initializer=np.ones(4))
    assert s.node.inputs[1].node.weights[0].trainable
    assert (-x).node.op.fn == "negative" and (x / x).node.op.type_name == "divide"
    graph = OpGraph([x], [m, s])
    assert {n.op.type_name for n in graph.nodes} == {"dense", "variable", "multiply"}


def test_eager_keeps_float32_with_python_scalars():
    a = np.ones((2, 3), "float32")
    assert ops.multiply(a, 0.5).dtype == np.float32
    assert ops.add(2, a).dtype == np.float32
    np.testing.assert_allclose(ops.subtract(1.0, a), 0.0)
    np.testing.assert_allclose(ops.divide(a, np.full(3, 4.0, "float32")), 0.25)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
def test_reductions(name):
    x = rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(getattr(ops, name)(x, axis=(1, 2)), getattr(np, name)(x, axis=(1, 2)))
    np.testing.assert_allclose(getattr(ops, name)(x), getattr(np, name)(x))
    t = getattr(ops, name)(sym(3, 4), axis=-1, keepdims=True)
    assert t.shape == (None, 3, 1) and t.node.op.sample_dim() == 0
    assert getattr(ops, name)(sym(3)).node.op.sample_dim() is None


def test_math_functions_eager():
    x = np.abs(rng.standard_normal((3, 2))) + 0.1
    for name in ("negative", "square", "sqrt", "exp", "log", "abs", "sign", "log1p", "expm1", "sin", "cos",
                 "floor", "ceil"):
        np.testing.assert_allclose(getattr(ops, name)(x), getattr(np, name)(x), err_msg=name)
    np.testing.assert_allclose(ops.clip(x, 0.2, 0.5), np.clip(x, 0.2, 0.5))
    np.testing.assert_allclose(ops.rsqrt(x), 1 / np.sqrt(x))
    np.testing.assert_allclose(ops.matmul(x, x.T), x @ x.T)
    np.testing.assert_array_equal(ops.greater(x, 0.5), x > 0.5)
    np.testing.assert_allclose(ops.where(x > 0.5, x, -x), np.where(x > 0.5, x, -x))
    assert ops.cast(x, "int32").dtype == np.int32
    np.testing.assert_allclose(ops.power(x, 2.0), x ** 2)
    np.testing.assert_allclose(ops.maximum(x, 0.5), np.maximum(x, 0.5))


def test_activations_and_softmax():
    x = rng.standard_normal((3, 5)).astype("float32")
    np.testing.assert_array_equal(ops.relu(x), np.maximum(x, 0))
    assert not np.signbit(ops.relu(-np.ones(2, "float32"))).any()
    np.testing.assert_allclose(ops.activation(x, "leaky_relu", negative_slope=0.3), np.where(x > 0, x, 0.3 * x),
                               rtol=1e-6)
    np.testing.assert_allclose(ops.softmax(x, axis=0).sum(0), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.exp(ops.log_softmax(x)).sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(ops.gelu(x), 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
                               rtol=1e-5, atol=1e-6)
    assert ops.softmax(sym(3, 4)).node.op.axis == 2
    with pytest.raises(ValueError, match="Valid names"):
        ops.activation(x, "relux")


def test_dropout_modes():
    x = np.ones((64, 50), "float32")
    np.testing.assert_array_equal(ops.dropout(x, 0.5, seed=1), x)
    y = ops.dropout(x, 0.5, seed=1, training=True)
    assert 0.4 < (y == 0).mean() < 0.6
    t = ops.dropout(sym(50), 0.5, seed=1, noise_shape=(None, 1))
    assert t.node.op.noise_shape == (None, 1)


def test_batch_norm_functional():
    x = rng.standard_normal((8, 3)).astype("float32")
    mm, mv = Variable("mm", (3,)), Variable("mv", (3,), initializer=np.ones(3))
    g, b = Variable("g", (3,), initializer=np.ones(3)), Variable("b", (3,))
    np.testing.assert_allclose(ops.batch_norm(x, g, b, mm, mv), x / np.sqrt(1 + 1e-3), rtol=1e-6)
    y = ops.batch_norm(x, None, None, mm, mv, training=True)
    np.testing.assert_allclose(y, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-4, atol=1e-5)
    t = ops.batch_norm(sym(4, 3), None, b, mm, mv, axis=-1)
    op = t.node.op
    assert op.axis == 2 and not op.scale and op.center and len(t.node.weights) == 4
    assert not t.node.weights[0].trainable


def test_layer_norm_functional():
    x = rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(ops.layer_norm(x, axis=[1, 2]),
                               (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-3),
                               rtol=1e-10)
    with pytest.raises(ShapeError, match="trailing"):
        ops.layer_norm(x, axis=1)


def test_shape_functions():
    x = sym(3, 4)
    assert ops.reshape(x, (-1, 12)).shape == (None, 12)
    assert ops.expand_dims(x, -1).shape == (None, 3, 4, 1)
    assert ops.squeeze(ops.expand_dims(x, 1)).shape == (None, 3, 4)
    assert ops.transpose(x, (0, 2, 1)).shape == (None, 4, 3)
    assert ops.concatenate([x, sym(3, 2)], axis=-1).shape == (None, 3, 6)
    with pytest.raises(ShapeError, match="match except on that axis"):
        ops.concatenate([x, sym(2, 2)], axis=-1)
    e = rng.standard_normal((2, 3))
    np.testing.assert_array_equal(ops.transpose(e), e.T)
    np.testing.assert_array_equal(ops.reshape(e, (3, 2)), e.reshape(3, 2))


def test_embedding_and_losses():
    table = var(5, 2)
    ids = sym(3, dtype="int32")
    assert ops.embedding(ids, table).shape == (None, 3, 2)
    np.testing.assert_array_equal(ops.embedding(np.array([[4, 0]]), table), table.numpy()[[[4, 0]]])
    t, p = np.eye(3)[[0, 2]], np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    np.testing.assert_allclose(ops.categorical_crossentropy(t, p), -np.log([0.7, 0.8]), rtol=1e-7)
    np.testing.assert_allclose(ops.sparse_categorical_crossentropy(np.array([0, 2]), p), -np.log([0.7, 0.8]),
                               rtol=1e-7)
    np.testing.assert_allclose(ops.loss("mse", np.zeros((2, 3)), np.ones((2, 3))), [1.0, 1.0])
    np.testing.assert_allclose(ops.mean_absolute_error(np.zeros((2, 3)), -np.ones((2, 3))), [1.0, 1.0])
    np.testing.assert_allclose(ops.binary_crossentropy(np.ones((1, 2)), np.full((1, 2), 0.5)), [[np.log(2)] * 2],
                               rtol=1e-6)  # element-wise, as Keras 3's ops
    z, x = np.array([[0.0, 1.0, 1.0]]), np.array([[-3.0, 0.5, 40.0]])
    exact = np.log1p(np.exp(x)) - x * z
    np.testing.assert_allclose(ops.binary_crossentropy(z, x, from_logits=True), exact, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ops.binary_crossentropy(z[:, :2], 1 / (1 + np.exp(-x[:, :2])), from_logits=False),
                               exact[:, :2], rtol=1e-5)
    lt = ops.loss("categorical_crossentropy", sym(10), sym(10))
    assert lt.shape == (None,) and lt.node.op.differentiable_inputs == (False, True)


def test_constant_stop_gradient_identity_and_lazy_conv():
    c = ops.constant([1.0, 2.0])
    assert c.shape == (2,) and c.dtype == "float32" and c.node.op.sample_dim() is None
    x = sym(2)
    assert not ops.stop_gradient(x).node.op.is_differentiable(0)
    assert ops.copy(x).node.op.fn == "identity"  # a node of its own; keras.ops.identity(n) is Keras' matrix
    assert np.array_equal(ops.identity(3), np.eye(3, dtype="float32")) and ops.identity(2, "int32").dtype == "int32"
    assert callable(ops.conv2d) and callable(ops.pool2d) and callable(ops.global_pool2d)
    registry = ops.op_registry()
    for name in ("dense", "matmul", "activation", "softmax", "log_softmax", "dropout", "embedding", "batch_norm",
                 "layer_norm", "add", "scalar", "unary", "compare", "cast", "where", "reduce", "reshape",
                 "transpose", "concatenate", "loss", "variable"):
        assert name in registry, name
    for name in ops.__all__:
        assert getattr(ops, name) is not None


def test_eager_training_batch_norm_updates_moving_stats_and_more_operators():
    x = rng.standard_normal((16, 2)).astype("float32") + 3
    mm, mv = Variable("mm", (2,)), Variable("mv", (2,), initializer=np.ones(2))
    ops.batch_norm(x, None, None, mm, mv, training=True)
    np.testing.assert_allclose(mm.numpy(), 0.01 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(mv.numpy(), 0.99 + 0.01 * x.var(0), rtol=1e-5)
    ops.batch_norm(x, None, None, mm, mv)  # inference leaves them
    np.testing.assert_allclose(mm.numpy(), 0.01 * x.mean(0), rtol=1e-5)
    t = sym(3)
    assert (t ** 2).node.op.fn == "power" and (2 ** t).node.op.reverse and abs(t).node.op.fn == "abs"
    assert (np.ones((2, 3), "float32") @ ops.transpose(t, (1, 0))).shape == (2, None)
