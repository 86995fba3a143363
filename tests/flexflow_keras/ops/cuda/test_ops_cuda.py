"""Every op with backend "cuda" (device arrays) against the same op with backend "cpu", tiny shapes."""

import numpy as np
import pytest

from flexflow_keras import ops as O
from flexflow_keras.ops.base import KernelContext
from flexflow_keras.ops.graph import TensorSpec

rng = np.random.default_rng(3)


def _specs(arrays):
    return [TensorSpec(a.shape, str(a.dtype)) for a in arrays]


def _alloc(spec_list, batch, fill):
    return [np.full(tuple(batch if s is None else s for s in sp.shape), fill, dtype=sp.dtype) for sp in spec_list]


def _run(op, backend, inputs, weights, dys, training):
    from numba import cuda

    dev = (lambda a: cuda.to_device(a)) if backend == "cuda" else (lambda a: a.copy())
    host = (lambda a: a.copy_to_host()) if backend == "cuda" else (lambda a: a)
    n = inputs[0].shape[0] if inputs else 1
    ins, ws = [dev(a) for a in inputs], [dev(w) for w in weights]
    outs = [dev(a) for a in _alloc(op.output_specs(_specs(inputs), _specs(weights)), n, 0)]
    saved = [dev(a) for a in _alloc(op.saved_specs(_specs(inputs), _specs(weights)), n, 0)]
    stats = [dev(a) for a in _alloc(op.stats_specs(_specs(inputs), _specs(weights), training), n, 0)]
    ctx = KernelContext(backend=backend, training=training, step=2, seed=5, batch_offset=4, global_batch=n,
                        accumulate_inputs=(True,) * len(inputs), accumulate_weights=(True,) * len(weights))
    if stats:
        op.forward_stats(ctx, ins, ws, stats)
    op.forward(ctx, ins, ws, outs, saved, stats)
    n_train = op.n_trainable_weights if op.n_trainable_weights is not None else len(weights)
    gin = [dev(np.ones_like(a)) if op.is_differentiable(i) and a.dtype.kind == "f" else None
           for i, a in enumerate(inputs)]
    gw = [dev(np.zeros_like(w)) if j < n_train else None for j, w in enumerate(weights)]
    if dys is not None:
        gouts = [dev(d) for d in dys]
        if op.two_stage_backward:
            op.backward_weights(ctx, ins, ws, outs, saved, stats, gouts, gw)
            op.backward_inputs(ctx, ins, ws, outs, saved, stats, gouts, gw, gin)
        else:
            op.backward(ctx, ins, ws, outs, saved, stats, gouts, gin, gw)
    if stats and training:
        op.update_state(ctx, stats, ws)
    got = [host(o) for o in outs] + [host(g) for g in gin + gw if g is not None] + [host(w) for w in ws]
    return got


def check_cuda(op, inputs, weights=(), training=False, grad=True, rtol=1e-6, atol=1e-8):
    inputs, weights = [np.asarray(a) for a in inputs], [np.asarray(w) for w in weights]
    outs = op.output_specs(_specs(inputs), _specs(weights))
    n = inputs[0].shape[0] if inputs else 1
    dys = None
    if grad:
        dys = [rng.standard_normal(tuple(n if s is None else s for s in sp.shape)) for sp in outs]
    want = _run(op, "cpu", inputs, weights, dys, training)
    got = _run(op, "cuda", inputs, weights, dys, training)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"buffer {k} of {op}")


def r(*shape):
    return rng.standard_normal(shape)


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_dense(act):
    check_cuda(O.LinearOp(act), [r(4, 5)], [r(5, 3), r(3)])


def test_matmul_activation_softmax():
    check_cuda(O.MatMulOp(), [r(2, 3, 4), r(4, 2)])
    check_cuda(O.ActivationOp("tanh"), [r(3, 4)])
    check_cuda(O.SoftmaxOp(1), [r(3, 4)])
    check_cuda(O.LogSoftmaxOp(1), [r(3, 4)])


def test_dropout():
    check_cuda(O.DropoutOp(0.5, 7), [r(4, 6)], training=True)
    check_cuda(O.DropoutOp(0.5, 7, (None, 1, 3)), [r(4, 2, 3)], training=True)
    check_cuda(O.DropoutOp(0.5, 7), [r(4, 6)], training=False)


def test_embedding():
    check_cuda(O.EmbeddingOp(), [np.array([[1, 0], [3, 3]])], [r(4, 3)])


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(training):
    check_cuda(O.BatchNormOp(3), [r(3, 2, 2, 4)], [r(4), r(4), r(4) * 0.1, np.abs(r(4)) + 0.5], training=training,
               rtol=1e-6, atol=1e-7)


def test_layer_norm():
    check_cuda(O.LayerNormOp(1), [r(3, 5)], [r(5), r(5)])


@pytest.mark.parametrize("cls", [O.AddOp, O.MultiplyOp, O.DivideOp, O.MaximumOp])
def test_binary(cls):
    check_cuda(cls(), [np.abs(r(3, 4)) + 0.5, np.abs(r(4)) + 0.5])


def test_scalar_unary_compare_cast_where():
    x = np.abs(r(3, 4)) + 0.2
    check_cuda(O.ScalarOp("subtract", 2.0, True), [x])
    check_cuda(O.UnaryOp("sqrt"), [x])
    check_cuda(O.UnaryOp("clip", 0.3, 0.9), [x])
    check_cuda(O.CompareOp("greater"), [x, np.full(4, 0.7)], grad=False)
    check_cuda(O.CastOp("float32"), [x], rtol=1e-6)
    check_cuda(O.WhereOp(), [x > 0.7, x, -x])


@pytest.mark.parametrize("fn", ["sum", "mean", "max"])
def test_reduce(fn):
    check_cuda(O.ReduceOp(fn, (1,), False), [r(3, 4, 2)])


def test_shape_ops():
    check_cuda(O.ReshapeOp((-1, 8)), [r(3, 4, 2)])
    check_cuda(O.TransposeOp((0, 2, 1)), [r(3, 4, 2)])
    check_cuda(O.ConcatOp(1), [r(3, 2), r(3, 3)])


@pytest.mark.parametrize("name,logits", [("categorical_crossentropy", True), ("binary_crossentropy", False),
                                         ("mean_squared_error", False)])
def test_losses(name, logits):
    t = np.eye(3)[[0, 2, 1, 1]]
    p = r(4, 3) if logits else np.clip(np.abs(r(4, 3)), 0.1, 0.9)
    check_cuda(O.LossOp(name, logits), [t, p])


def test_sparse_loss_float_labels():
    check_cuda(O.LossOp("sparse_categorical_crossentropy", True), [np.array([[0.0], [2.0], [1.0]]), r(3, 3)])
