"""Every CUDA kernel against its CPU twin (itself tested against the float64 references), tiny shapes."""

import numpy as np
import pytest
from cuda_harness import run_pair  # noqa: I001 - test-local helper module

from kernels import (
    activations,
    batchnorm,
    dropout,
    elementwise,
    embedding,
    layernorm,
    linear,
    losses,
    reduce,
    shape,
    softmax,
)

rng = np.random.default_rng(7)


def rand(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def seeded(fn):
    """Make `fn` return the same arrays on each call (run_pair builds the args twice)."""
    state = rng.bit_generator.state

    def make():
        rng.bit_generator.state = state
        return fn()
    return make


@pytest.mark.parametrize("name", ["relu", "gelu", "sigmoid", "tanh", "elu", "swish", "softplus"])
def test_activations(name):
    act = activations.resolve_activation(name)
    run_pair(activations.activation_forward_cpu, activations.activation_forward_cuda,
             seeded(lambda: [rand(3, 5), np.zeros((3, 5)), act]))
    run_pair(activations.activation_backward_cpu, activations.activation_backward_cuda,
             seeded(lambda: [rand(3, 5), rand(3, 5), rand(3, 5), np.zeros((3, 5)), act, True]))


@pytest.mark.parametrize("act_name", ["linear", "relu", "gelu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear(act_name, dtype):
    act = activations.resolve_activation(act_name)
    z = None if activations.grad_from_output(act) else np.zeros((5, 3), dtype)

    def fwd():
        return [rand(5, 18, dtype=dtype), rand(18, 3, dtype=dtype), rand(3, dtype=dtype),
                np.zeros((5, 3), dtype), act, None if z is None else z.copy()]
    host = run_pair(linear.linear_forward_cpu, linear.linear_forward_cuda, seeded(fwd), rtol=1e-4, atol=1e-5)
    x, w, _, y, _, zz = host

    def bwd():
        return [x, w, y, rand(5, 3, dtype=dtype), np.ones((5, 18), dtype), np.ones((18, 3), dtype),
                np.ones(3, dtype), act, zz, (True, False, True)]
    run_pair(linear.linear_backward_cpu, linear.linear_backward_cuda, seeded(bwd), rtol=1e-4, atol=1e-5)


def test_gemm_transposes():
    from numba import cuda

    from kernels.gpu.linear import gemm_cuda

    a, b = rand(20, 17), rand(20, 33)
    c = cuda.to_device(np.zeros((17, 33)))
    gemm_cuda(cuda.to_device(a), cuda.to_device(b), c, trans_a=True)
    np.testing.assert_allclose(c.copy_to_host(), a.T @ b, rtol=1e-10)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_float32_tiles_and_dispatch(ta, tb):
    # several blocks and partial tiles in both dimensions, float32, accumulate; under the simulator the
    # dispatch must fall back to the Numba GEMM (cuBLAS needs a real GPU), on a device use cuBLAS if it can
    from numba import config, cuda

    from kernels.gpu import blas
    from kernels.gpu.linear import gemm_cuda

    # simulator tiles: 8 x 8 outputs, 4 deep (kernels.gpu.gemm); a device run uses 64 x 64 x 16
    a, b = _rand32(*((21, 19) if ta else (19, 21))), _rand32(*((13, 21) if tb else (21, 13)))
    c0 = _rand32(19, 13)
    c = cuda.to_device(c0)
    gemm_cuda(cuda.to_device(a), cuda.to_device(b), c, trans_a=ta, trans_b=tb, accumulate=True)
    want = c0 + (a.T if ta else a).astype(np.float64) @ (b.T if tb else b)
    np.testing.assert_allclose(c.copy_to_host(), want, rtol=1e-4, atol=1e-4)
    backend, why = blas.backend()
    if config.ENABLE_CUDASIM:
        assert backend == "numba" and "simulator" in why
        assert blas.gemm(cuda.to_device(a), cuda.to_device(b), c, ta, tb, False) is False


@pytest.mark.parametrize("log", [False, True])
def test_softmax(log):
    fwd = softmax.log_softmax_forward_cpu if log else softmax.softmax_forward_cpu
    fwd_c = softmax.log_softmax_forward_cuda if log else softmax.softmax_forward_cuda
    bwd = softmax.log_softmax_backward_cpu if log else softmax.softmax_backward_cpu
    bwd_c = softmax.log_softmax_backward_cuda if log else softmax.softmax_backward_cuda
    host = run_pair(fwd, fwd_c, seeded(lambda: [rand(2, 4, 3), np.zeros((2, 4, 3)), 1]))
    run_pair(bwd, bwd_c, seeded(lambda: [host[1], rand(2, 4, 3), np.zeros((2, 4, 3)), 1]))


@pytest.mark.parametrize("kind", [losses.CCE, losses.CCE_LOGITS, losses.BCE, losses.BCE_LOGITS, losses.MSE,
                                  losses.MAE])
def test_dense_losses(kind):
    def targets():
        return np.abs(rand(4, 3)) if kind in (losses.CCE, losses.BCE) else rand(4, 3)

    p = np.clip(np.abs(rand(4, 3)), 0.05, 0.95) if kind in (losses.CCE, losses.BCE) else rand(4, 3)
    t = targets()
    run_pair(losses.loss_forward_cpu, losses.loss_forward_cuda, lambda: [kind, t, p, np.zeros(4), 0.1])
    run_pair(losses.loss_backward_cpu, losses.loss_backward_cuda,
             lambda: [kind, t, p, np.ones(4), np.zeros((4, 3)), 0.1])


@pytest.mark.parametrize("logits", [False, True])
def test_sparse_losses(logits):
    labels = np.array([0, 2, 1, 2])
    p = rand(4, 3) if logits else np.abs(rand(4, 3)) + 0.1
    run_pair(losses.sparse_loss_forward_cpu, losses.sparse_loss_forward_cuda,
             lambda: [labels, p, np.zeros(4), logits])
    run_pair(losses.sparse_loss_backward_cpu, losses.sparse_loss_backward_cuda,
             lambda: [labels, p, np.ones(4), np.zeros((4, 3)), logits])


def test_batchnorm_stages():
    x, dy = rand(3, 2, 2, 4), rand(3, 2, 2, 4)
    gamma, beta = rand(4), rand(4)
    sums = run_pair(batchnorm.batchnorm_stats_cpu, batchnorm.batchnorm_stats_cuda,
                    lambda: [x, np.zeros((2, 4))])[1]
    mean, var = batchnorm.batchnorm_moments(sums, 12)
    run_pair(batchnorm.batchnorm_forward_cpu, batchnorm.batchnorm_forward_cuda,
             lambda: [x, mean, var, gamma, beta, 1e-3, np.zeros_like(x)])
    dg = run_pair(batchnorm.batchnorm_backward_weights_cpu, batchnorm.batchnorm_backward_weights_cuda,
                  lambda: [x, dy, mean, var, 1e-3, np.zeros(4), np.zeros(4)])
    run_pair(batchnorm.batchnorm_backward_inputs_cpu, batchnorm.batchnorm_backward_inputs_cuda,
             lambda: [x, dy, mean, var, gamma, 1e-3, dg[5], dg[6], 12.0, True, np.zeros_like(x)])


def _rand32(*shape):
    # own generator: these tests must not shift the shared `rng` stream the other tests' data comes from
    return _RNG32.standard_normal(shape).astype(np.float32)


_RNG32 = np.random.default_rng(32)


@pytest.mark.parametrize("name", ["gelu", "selu", "sigmoid"])
def test_activations_float32(name):
    # float32 data runs the device functions with float32 constants (kernels.gpu.activations)
    act = activations.resolve_activation(name)
    x = _rand32(4, 9) * 3
    host = run_pair(activations.activation_forward_cpu, activations.activation_forward_cuda,
                    lambda: [x, np.zeros_like(x), act], rtol=1e-5, atol=1e-6)
    run_pair(activations.activation_backward_cpu, activations.activation_backward_cuda,
             lambda: [x, host[1], np.ones_like(x), np.zeros_like(x), act], rtol=1e-4, atol=1e-5)


def test_softmax_long_rows_float32():
    # rows longer than a warp (each lane takes several entries), rows spanning several blocks
    x = _rand32(5, 70)
    host = run_pair(softmax.softmax_forward_cpu, softmax.softmax_forward_cuda,
                    lambda: [x, np.zeros((5, 70), np.float32), -1], rtol=1e-5, atol=1e-7)
    dy = _rand32(5, 70)
    run_pair(softmax.log_softmax_backward_cpu, softmax.log_softmax_backward_cuda,
             lambda: [np.log(host[1]), dy, np.ones((5, 70), np.float32), -1, True], rtol=1e-4, atol=1e-6)


def test_layernorm_long_rows_float32():
    x, dy, g, b = (_rand32(5, 45), _rand32(5, 45), _rand32(45),
                   _rand32(45))
    run_pair(layernorm.layernorm_forward_cpu, layernorm.layernorm_forward_cuda,
             lambda: [x, g, b, np.zeros_like(x)], rtol=1e-4, atol=1e-5)
    run_pair(layernorm.layernorm_backward_cpu, layernorm.layernorm_backward_cuda,
             lambda: [x, g, dy, np.zeros_like(x), np.zeros(45, np.float32), np.ones(45, np.float32), 1, 1e-3,
                      (False, False, True)], rtol=1e-3, atol=1e-4)


def test_batchnorm_nhwc_tiles_float32():
    # 90 rows: two pass-1 chunks under the simulator; 11 channels: a partial channel tile
    x, dy = _rand32(3, 5, 6, 11), _rand32(3, 5, 6, 11)
    sums = run_pair(batchnorm.batchnorm_stats_cpu, batchnorm.batchnorm_stats_cuda,
                    lambda: [x, np.ones((2, 11))], rtol=1e-5, atol=1e-4)[1]
    mean, var = batchnorm.batchnorm_moments(sums - 1, 90)
    run_pair(batchnorm.batchnorm_backward_weights_cpu, batchnorm.batchnorm_backward_weights_cuda,
             lambda: [x, dy, mean, var, 1e-3, np.zeros(11, np.float32), np.ones(11, np.float32), -1,
                      (False, True)], rtol=1e-4, atol=1e-4)


def test_layernorm():
    x, dy, g, b = rand(3, 5), rand(3, 5), rand(5), rand(5)
    run_pair(layernorm.layernorm_forward_cpu, layernorm.layernorm_forward_cuda,
             lambda: [x, g, b, np.zeros((3, 5))])
    run_pair(layernorm.layernorm_backward_cpu, layernorm.layernorm_backward_cuda,
             lambda: [x, g, dy, np.zeros((3, 5)), np.zeros(5), np.zeros(5)])


def test_embedding():
    ids, table = np.array([[1, 3], [3, 0]]), rand(4, 3)
    run_pair(embedding.embedding_forward_cpu, embedding.embedding_forward_cuda,
             lambda: [ids, table, np.zeros((2, 2, 3))])
    run_pair(embedding.embedding_backward_cpu, embedding.embedding_backward_cuda,
             seeded(lambda: [ids, rand(2, 2, 3), np.full((4, 3), 7.0)]))


def test_embedding_bad_id():
    run_pair(embedding.embedding_forward_cpu, embedding.embedding_forward_cuda,
             lambda: [np.array([0, 9, 1]), np.ones((4, 2)), np.full((3, 2), 5.0)])


@pytest.mark.parametrize("mask_shape", [(3, 2, 4), (3, 1, 4)])
def test_dropout(mask_shape):
    key = dropout.dropout_key(3, 1, 2)
    x = rand(3, 2, 4)
    host = run_pair(dropout.dropout_forward_cpu, dropout.dropout_forward_cuda,
                    lambda: [x, np.zeros((3, 2, 4)), np.full(mask_shape, 9, np.uint8), 0.5, key, 5])
    run_pair(dropout.dropout_backward_cpu, dropout.dropout_backward_cuda,
             lambda: [x, host[2], np.zeros((3, 2, 4)), 0.5])


@pytest.mark.parametrize("name", list(elementwise.BINARY))
def test_binary(name):
    code = elementwise.BINARY[name]
    a, b = np.abs(rand(2, 1, 3)) + 0.5, np.abs(rand(4, 1)) + 0.5
    run_pair(elementwise.binary_forward_cpu, elementwise.binary_forward_cuda,
             lambda: [code, a, b, np.zeros((2, 4, 3))])
    y = getattr(np, name)(a, b)
    run_pair(elementwise.binary_backward_cpu, elementwise.binary_backward_cuda,
             seeded(lambda: [code, a, b, y, rand(2, 4, 3), np.zeros((2, 1, 3)), np.zeros((4, 1))]))


@pytest.mark.parametrize("name", ["negative", "square", "sqrt", "exp", "log", "abs", "clip", "rsqrt", "round"])
def test_unary(name):
    code = elementwise.UNARY[name]
    x = np.abs(rand(2, 3)) + 0.2 if name in ("sqrt", "log", "rsqrt") else rand(2, 3) * 2
    x[0, 0] = 2.5
    x[0, 1] = 0.25  # inside clip's (-0.5, 0.5): its gradient is never all zero, whatever the random draw
    host = run_pair(elementwise.unary_forward_cpu, elementwise.unary_forward_cuda,
                    lambda: [code, x, np.zeros((2, 3)), -0.5, 0.5])
    if code not in elementwise.ZERO_GRAD_UNARY:
        run_pair(elementwise.unary_backward_cpu, elementwise.unary_backward_cuda,
                 seeded(lambda: [code, x, host[2], rand(2, 3), np.zeros((2, 3)), -0.5, 0.5]))


def test_compare_cast_where():
    a, b = rand(2, 3), rand(3)
    run_pair(elementwise.compare_forward_cpu, elementwise.compare_forward_cuda,
             lambda: ["greater", a, b, np.zeros((2, 3), bool)])
    run_pair(elementwise.cast_forward_cpu, elementwise.cast_forward_cuda, lambda: [a, np.zeros((2, 3), np.float32)])
    cond = a > 0
    run_pair(elementwise.where_forward_cpu, elementwise.where_forward_cuda,
             lambda: [cond, a, b, np.zeros((2, 3))])
    run_pair(elementwise.where_backward_cpu, elementwise.where_backward_cuda,
             lambda: [cond, a, np.zeros((2, 3)), np.zeros(3)])


@pytest.mark.parametrize("name", list(reduce.REDUCE))
@pytest.mark.parametrize("axes", [(1,), (0, 2)])
def test_reduce(name, axes):
    code = reduce.REDUCE[name]
    x = rand(2, 3, 4)
    x[0, 0, 0] = x[0, 0, 1] = 9.0 if name == "max" else -9.0  # a tie
    ks = reduce.kept_shape(x.shape, axes)
    host = run_pair(reduce.reduce_forward_cpu, reduce.reduce_forward_cuda, lambda: [code, x, axes, np.zeros(ks)])
    run_pair(reduce.reduce_backward_cpu, reduce.reduce_backward_cuda,
             seeded(lambda: [code, x, host[3], axes, rand(*ks), np.zeros_like(x)]))


def test_data_movement():
    x = rand(2, 3, 4)
    run_pair(shape.copy_forward_cpu, shape.copy_forward_cuda, lambda: [x, np.zeros((6, 4))])
    run_pair(shape.transpose_forward_cpu, shape.transpose_forward_cuda, lambda: [x, (2, 0, 1), np.zeros((4, 2, 3))])
    run_pair(shape.transpose_backward_cpu, shape.transpose_backward_cuda,
             lambda: [x.transpose(2, 0, 1).copy(), (2, 0, 1), np.zeros((2, 3, 4))])
    a, b = rand(2, 2, 4), rand(2, 1, 4)
    run_pair(lambda xs0, xs1, y: shape.concat_forward_cpu([xs0, xs1], 1, y),
             lambda xs0, xs1, y: shape.concat_forward_cuda([xs0, xs1], 1, y), lambda: [a, b, np.zeros((2, 3, 4))])
    dy = rand(2, 3, 4)
    run_pair(lambda d, g1: shape.concat_backward_cpu(d, 1, [2, 1], [None, g1]),
             lambda d, g1: shape.concat_backward_cuda(d, 1, [2, 1], [None, g1]), lambda: [dy, np.zeros((2, 1, 4))])


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 2)), ((2, 3, 4), (4, 2)), ((1, 3, 4), (2, 4, 2)), ((4,), (4, 2)),
                                   ((3, 4), (4,))])
def test_matmul_batched(sa, sb):
    a, b = rand(*sa), rand(*sb)
    y_shape = (a @ b).shape
    run_pair(linear.matmul_forward_cpu, linear.matmul_forward_cuda, lambda: [a, b, np.zeros(y_shape)])
    dy = rand(*y_shape)
    run_pair(linear.matmul_backward_cpu, linear.matmul_backward_cuda,
             lambda: [a, b, dy, np.zeros(sa), np.zeros(sb)])


@pytest.mark.parametrize("op,fn", [("+", np.add), ("*", np.multiply), ("max", np.maximum), ("min", np.minimum)])
def test_runtime_device_folds(op, fn):
    from numba import cuda

    from runtime.gpu import fold_on_device

    a, b = _rand32(37), _rand32(37)
    dst = cuda.to_device(a)
    assert fold_on_device(op, dst, cuda.to_device(b))
    np.testing.assert_array_equal(dst.copy_to_host(), fn(a, b))


def test_float_ids_convert_to_int():
    from numba import cuda

    from kernels.gpu.embedding import int_ids

    ids = np.array([0.0, 3.0, 2.0, 7.0], np.float32)
    np.testing.assert_array_equal(int_ids(cuda.to_device(ids)).copy_to_host(), [0, 3, 2, 7])


@pytest.mark.parametrize("name", ["sqrt", "rsqrt"])
def test_sqrt_rsqrt_gradient_at_zero_with_no_upstream_is_zero(name):
    """TensorFlow's SqrtGrad/RsqrtGrad: dy = 0 gives 0 even at x = 0 (f' infinite), not 0 * inf = nan;
    keras.ops.normalize's clamped rsqrt of a zero row relies on it. The other entries keep the formula."""
    code = elementwise.UNARY[name]
    x = np.array([[0.0, 0.0, 4.0]])
    y = np.sqrt(x) if name == "sqrt" else np.array([[np.inf, np.inf, 0.5]])
    dy = np.array([[0.0, 1.0, 2.0]])
    host = run_pair(elementwise.unary_backward_cpu, elementwise.unary_backward_cuda,
                    lambda: [code, x, y, dy, np.zeros((1, 3))])
    assert host[4][0, 0] == 0 and not np.isfinite(host[4][0, 1])
