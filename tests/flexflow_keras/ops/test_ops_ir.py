"""Every op of the IR forward and backward on small float64 shapes (reference, numerical gradient,
accumulate flags and, for batch ops, a data-parallel split)."""

import numpy as np
import pytest
from op_harness import check_op, run_backward, run_forward

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import (
    ActivationOp,
    BatchNormOp,
    BinaryOp,
    CastOp,
    CompareOp,
    ConcatOp,
    DropoutOp,
    EmbeddingOp,
    LayerNormOp,
    LinearOp,
    LogSoftmaxOp,
    LossOp,
    MatMulOp,
    ReduceOp,
    ReshapeOp,
    ScalarOp,
    SoftmaxOp,
    StopGradientOp,
    TransposeOp,
    UnaryOp,
    VariableOp,
    WhereOp,
)
from kernels import reference as ref

rng = np.random.default_rng(5)


def r(*shape):
    return rng.standard_normal(shape)


@pytest.mark.parametrize("act", ["linear", "relu", "tanh", "gelu", "swish", "elu"])
def test_linear(act):
    x, w, b = r(4, 5), r(5, 3), r(3)
    check_op(LinearOp(act), [x], [w, b], ref=lambda x, w, b: ref.linear(x, w, b, act), shards=2)


def test_linear_rank3_no_bias_and_params():
    op = LinearOp("relu", (("negative_slope", 0.1),))
    check_op(op, [r(2, 3, 5)], [r(5, 4)], ref=lambda x, w: ref.linear(x, w, None, "relu", negative_slope=0.1))


def test_linear_shape_error_names_the_fix():
    with pytest.raises(ShapeError, match=r"last dim is 784 .* received input shape \(None, 28, 28\).*Flatten"):
        from flexflow_keras.ops.graph import TensorSpec
        LinearOp().output_specs([TensorSpec((None, 28, 28))], [TensorSpec((784, 10))])


def test_matmul():
    check_op(MatMulOp(), [r(2, 3, 4), r(4, 2)], ref=lambda a, b: a @ b, shards=2)


@pytest.mark.parametrize("name,params", [("relu", ()), ("sigmoid", ()), ("leaky_relu", (("negative_slope", 0.3),)),
                                         ("gelu", (("approximate", True),)), ("softplus", ()), ("selu", ())])
def test_activation(name, params):
    x = r(3, 4) + 0.05  # away from 0, relu's kink
    check_op(ActivationOp(name, params), [x], ref=lambda x: ref.activation(name, x, **dict(params)))


@pytest.mark.parametrize("axis", [1, 2])
def test_softmax_ops(axis):
    x = r(2, 3, 4)
    check_op(SoftmaxOp(axis), [x], ref=lambda x: ref.softmax(x, axis), shards=2)
    check_op(LogSoftmaxOp(axis), [x], ref=lambda x: ref.log_softmax(x, axis))


def test_dropout_training_and_inference():
    x = r(6, 10)
    op = DropoutOp(0.4, seed=3)
    y = check_op(op, [x], training=True, shards=3)[0]
    kept = y != 0
    np.testing.assert_allclose(y[kept], x[kept] / 0.6)
    assert 0.2 < 1 - kept.mean() < 0.6
    check_op(op, [x], training=False, ref=lambda x: x)
    check_op(DropoutOp(0.5, 1, (None, 1)), [x], training=True, shards=2)
    with pytest.raises(ValueError, match="rate in \\[0, 1\\)"):
        DropoutOp(1.0)


@pytest.mark.parametrize("shape,axis", [((6, 3), 1), ((4, 2, 2, 3), 3), ((4, 3, 2), 1)])
def test_batch_norm_training_two_stage_sharded(shape, axis):
    c = shape[axis]
    x = r(*shape) * 2 + 1
    w = [r(c), r(c), np.zeros(c), np.ones(c)]
    op = BatchNormOp(axis)
    y = check_op(op, [x], w, training=True, shards=2, ref=lambda x, g, b, m, v: ref.batchnorm_train(x, g, b, axis=axis)[0],
                 grad_rtol=1e-4, grad_atol=1e-6)[0]
    assert y.shape == x.shape


def test_batch_norm_inference_and_moving_update():
    x = r(5, 3)
    g, b, m, v = r(3), r(3), r(3), np.abs(r(3)) + 0.5
    op = BatchNormOp(1)
    check_op(op, [x], [g, b, m, v], training=False,
             ref=lambda x, g, b, m, v: (x - m) / np.sqrt(v + 1e-3) * g + b)
    outs, saved, stats, ctx = run_forward(op, [x], [g, b, m, v], training=True)
    weights = [g, b, m.copy(), v.copy()]
    op.update_state(ctx, stats, weights)
    np.testing.assert_allclose(weights[2], m * 0.99 + x.mean(0) * 0.01)
    np.testing.assert_allclose(weights[3], v * 0.99 + x.var(0) * 0.01)
    frozen = BatchNormOp(1, training=False)
    assert frozen.stats_specs([], [], True) == ()


def test_batch_norm_two_stage_needs_reduced_sums_when_sharded():
    x = r(4, 2)
    op = BatchNormOp(1, scale=False)
    w = [np.ones(2), r(2), np.zeros(2), np.ones(2)]
    outs, saved, stats, _ = run_forward(op, [x[:2]], w, training=True, global_batch=4)
    from flexflow_keras.ops.base import KernelContext
    ctx = KernelContext(training=True, global_batch=4)
    with pytest.raises(Exception, match="required_grad_weights"):
        stats[1][0] = 4.0  # as if the other shard's count were folded in
        op.backward_inputs(ctx, [x[:2]], w, outs, saved, stats, [np.ones((2, 2))], [None, None], [np.zeros((2, 2))])
    # a whole batch on one shard works without the buffers (scale=False: no gamma gradient wanted)
    check_op(op, [x], w, training=True, grad_rtol=1e-4, grad_atol=1e-6)


@pytest.mark.parametrize("shape,n_axes", [((3, 5), 1), ((2, 3, 4), 2)])
def test_layer_norm(shape, n_axes):
    ps = shape[len(shape) - n_axes:]
    x, g, b = r(*shape), r(*ps), r(*ps)
    check_op(LayerNormOp(n_axes), [x], [g, b], ref=lambda x, g, b: ref.layernorm(x, g, b, n_axes), shards=2)
    check_op(LayerNormOp(n_axes, center=False), [x], [g], ref=lambda x, g: ref.layernorm(x, g, 0, n_axes))


def test_embedding():
    ids = np.array([[0, 3], [2, 2], [1, 0]])
    table = r(4, 3)
    check_op(EmbeddingOp(), [ids], [table], ref=lambda i, t: t[i], shards=3)
    with pytest.raises(ValueError, match="id 7 .*input_dim"):
        run_forward(EmbeddingOp(), [np.array([1, 7])], [table])


@pytest.mark.parametrize("fn", ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power"])
def test_binary(fn):
    a, b = np.abs(r(4, 3)) + 0.5, np.abs(r(3)) + 0.5
    f = getattr(np, fn)
    check_op(BinaryOp(fn), [a, b], ref=f, shards=2)
    check_op(ScalarOp(fn, 1.5), [a], ref=lambda a: f(a, 1.5))
    check_op(ScalarOp(fn, 1.5, reverse=True), [a], ref=lambda a: f(1.5, a))


@pytest.mark.parametrize("fn", ["negative", "square", "sqrt", "exp", "log", "abs", "reciprocal", "log1p", "sin",
                                "rsqrt"])
def test_unary(fn):
    x = np.abs(r(3, 4)) + 0.3
    f = {"rsqrt": lambda v: 1 / np.sqrt(v)}.get(fn) or getattr(np, fn)
    check_op(UnaryOp(fn), [x], ref=f)


def test_clip_stop_gradient_cast_compare_where():
    x = r(4, 3) * 2
    check_op(UnaryOp("clip", -0.5, 0.5), [x], ref=lambda v: np.clip(v, -0.5, 0.5))
    op = StopGradientOp()
    assert not op.is_differentiable(0)
    check_op(op, [x], ref=lambda v: v, grad=False)
    y = check_op(CastOp("float32"), [x], grad=False)[0]
    assert y.dtype == np.float32 and not CastOp("int32").is_differentiable(0)
    check_op(CompareOp("greater"), [x, np.zeros(3)], ref=lambda a, b: a > b)
    cond = x > 0
    check_op(WhereOp(), [cond, x, -x], ref=lambda c, a, b: np.where(c, a, b))


@pytest.mark.parametrize("fn", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("axes,keep", [((1,), False), ((1, 2), True)])
def test_reduce(fn, axes, keep):
    x = r(3, 4, 2)
    check_op(ReduceOp(fn, axes, keep), [x], ref=lambda v: getattr(np, fn)(v, axis=axes, keepdims=keep), shards=3)
    assert ReduceOp(fn, (0, 1)).sample_dim() is None


def test_reshape_transpose_concat():
    x = r(3, 4, 2)
    check_op(ReshapeOp((-1, 8)), [x], ref=lambda v: v.reshape(3, 8), shards=3)
    check_op(TransposeOp((0, 2, 1)), [x], ref=lambda v: v.transpose(0, 2, 1), shards=3)
    assert TransposeOp((1, 0, 2)).sample_dim() == 1
    check_op(ConcatOp(1), [x, r(3, 1, 2)], ref=lambda a, b: np.concatenate([a, b], 1), shards=3)


def test_reshape_rows_split_or_join_whole_samples():
    from flexflow_keras.ops.graph import TensorSpec
    with pytest.raises(ShapeError, match="one size must divide the other"):
        ReshapeOp((-1, 5)).output_specs([TensorSpec((None, 3, 4))], [])
    # 3 rows per sample (ops/graph.py's batch_scale; tests/flexflow_keras/ops/test_reshape_batch_fold_tf.py)
    assert ReshapeOp((-1, 4)).output_specs([TensorSpec((None, 3, 4))], [])[0].shape == (None, 4)
    assert ReshapeOp((-1, 4)).batch_ratio([TensorSpec((None, 3, 4))]) == 3
    with pytest.raises(ShapeError, match="must start with -1 or None"):
        ReshapeOp((12,)).output_specs([TensorSpec((None, 3, 4))], [])
    assert ReshapeOp((None, 2, 6)).output_specs([TensorSpec((None, 3, 4))], [])[0].shape == (None, 2, 6)


def test_variable_op():
    from flexflow_keras.ops.base import KernelContext

    w = r(2, 3)
    op = VariableOp()
    out = np.empty((2, 3))
    op.forward(KernelContext(), [], [w], [out], [], [])
    np.testing.assert_array_equal(out, w)
    g = np.ones((2, 3))
    op.backward(KernelContext(accumulate_weights=(True,)), [], [w], [out], [], [], [np.full((2, 3), 2.0)], [], [g])
    np.testing.assert_array_equal(g, 3.0)
    assert op.sample_dim() is None


LOSS_CASES = [
    ("categorical_crossentropy", False, 0.0), ("categorical_crossentropy", True, 0.1),
    ("categorical_crossentropy", False, 0.2), ("binary_crossentropy", False, 0.0),
    ("binary_crossentropy", True, 0.1), ("mean_squared_error", False, 0.0), ("mean_absolute_error", False, 0.0),
]


@pytest.mark.parametrize("name,logits,ls", LOSS_CASES)
def test_dense_losses(name, logits, ls):
    n, c = 6, 4
    if name == "categorical_crossentropy":
        t = np.eye(c)[rng.integers(0, c, n)]
        p = r(n, c) if logits else ref.softmax(r(n, c))
        want = lambda t, p: ref.categorical_crossentropy(t, p, logits, ls)  # noqa: E731
    elif name == "binary_crossentropy":
        t = rng.integers(0, 2, (n, c)).astype(float)
        p = r(n, c) if logits else rng.uniform(0.1, 0.9, (n, c))
        want = lambda t, p: ref.binary_crossentropy(t, p, logits, ls)  # noqa: E731
    else:
        t, p = r(n, c), r(n, c)
        want = getattr(ref, name)
    check_op(LossOp(name, logits, ls), [t, p], ref=want, shards=2)


@pytest.mark.parametrize("logits", [False, True])
def test_sparse_loss(logits):
    labels = rng.integers(0, 4, (6, 1))
    p = r(6, 4) if logits else ref.softmax(r(6, 4))
    op = LossOp("sparse_categorical_crossentropy", logits)
    check_op(op, [labels, p], ref=lambda t, p: ref.sparse_categorical_crossentropy(t[:, 0], p, logits), shards=3)
    assert op.on_logits().from_logits and not op.is_differentiable(0)
    with pytest.raises(ValueError, match="label 9 .* 4 classes"):
        run_forward(op, [np.array([1, 9]), p[:2]], [])


def test_loss_shape_errors_name_the_fix():
    from flexflow_keras.ops.graph import TensorSpec
    with pytest.raises(ShapeError, match="to_categorical"):
        LossOp("categorical_crossentropy").output_specs([TensorSpec((None,)), TensorSpec((None, 10))], [])
    with pytest.raises(ShapeError, match="integer class id"):
        LossOp("sparse_categorical_crossentropy").output_specs([TensorSpec((None, 10)), TensorSpec((None, 10))], [])
    with pytest.raises(ValueError, match="Valid losses"):
        LossOp("cross_entropy")


def test_mse_expands_rank1_labels():
    t, p = r(5), r(5, 1)
    check_op(LossOp("mean_squared_error"), [t, p], ref=lambda t, p: (p[:, 0] - t) ** 2)


def test_run_backward_skips_unwanted_buffers():
    x, w = r(3, 2), r(2, 2)
    op = LinearOp()
    outs, saved, stats, _ = run_forward(op, [x], [w])
    gin, gw = run_backward(op, [x], [w], outs, saved, stats, [np.ones((3, 2))], want=([False], [True]))
    assert gin[0] is None and np.isfinite(gw[0]).all()
