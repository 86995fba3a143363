"""Dense and matmul kernels against the float64 references."""

import numpy as np
import pytest

from kernels import reference as ref
from kernels.activations import grad_from_output, resolve_activation
from kernels.linear import linear_backward_cpu, linear_forward_cpu, matmul_backward_cpu, matmul_forward_cpu

rng = np.random.default_rng(1)


@pytest.mark.parametrize("act_name", ["linear", "relu", "sigmoid", "tanh", "gelu", "elu", "swish", "relu6"])
@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 7)])
@pytest.mark.parametrize("use_bias", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear(act_name, shape, use_bias, dtype):
    act = resolve_activation(act_name)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((7, 4)).astype(dtype)
    b = rng.standard_normal(4).astype(dtype) if use_bias else None
    y = np.empty(shape[:-1] + (4,), dtype)
    z = None if grad_from_output(act) else np.empty_like(y)
    linear_forward_cpu(x, w, b, y, act, z)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, ref.linear(x, w, b, act_name), rtol=tol, atol=tol)
    dy = rng.standard_normal(y.shape).astype(dtype)
    dx, dw = np.empty_like(x), np.empty_like(w)
    db = np.empty(4, dtype) if use_bias else None
    linear_backward_cpu(x, w, y, dy, dx, dw, db, act, z)
    rdx, rdw, rdb = ref.linear_grads(x, w, b, dy, act_name)
    np.testing.assert_allclose(dx, rdx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, rdw, rtol=1e-4, atol=1e-4)
    if use_bias:
        np.testing.assert_allclose(db, rdb, rtol=1e-4, atol=1e-4)
    # accumulate adds; None buffers are skipped
    linear_backward_cpu(x, w, y, dy, dx, dw, db, act, z, accumulate=(True, True, True))
    np.testing.assert_allclose(dx, 2 * rdx, rtol=1e-4, atol=2e-4)
    np.testing.assert_allclose(dw, 2 * rdw, rtol=1e-4, atol=2e-4)
    linear_backward_cpu(x, w, y, dy, None, dw, None, act, z)
    np.testing.assert_allclose(dw, rdw, rtol=1e-4, atol=1e-4)


def test_linear_output_must_be_contiguous():
    x = np.ones((4, 3), np.float32)
    y = np.empty((4, 8), np.float32)[:, ::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        linear_forward_cpu(x, np.ones((3, 4), np.float32), None, y)


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
                                   ((1, 3, 4), (2, 4, 5)), ((4,), (4, 5)), ((3, 4), (4,))])
def test_matmul(sa, sb):
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    want = a @ b
    y = np.empty(want.shape)
    matmul_forward_cpu(a, b, y)
    np.testing.assert_allclose(y, want)
    dy = rng.standard_normal(want.shape)
    da, db = np.empty_like(a), np.empty_like(b)
    matmul_backward_cpu(a, b, dy, da, db)
    np.testing.assert_allclose(da, ref.numerical_grad(lambda v: v @ b, a, dy), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(db, ref.numerical_grad(lambda v: a @ v, b, dy), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("rows,n_in,n_out", [(1, 7, 16), (13, 33, 48), (64, 20, 80), (5, 3, 64), (9, 600, 32)])
@pytest.mark.parametrize("strided_x", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_linear_wide_float32_outputs(rows, n_in, n_out, strided_x, threads, monkeypatch):
    """Output widths that are multiples of 16 (the vector micro-kernels' path on AVX-512 hosts with one
    thread per kernel, BLAS elsewhere or with more threads) and a strided input (always BLAS): the same
    numbers as the float64 reference."""
    from kernels import _conv_simd

    monkeypatch.setattr(_conv_simd, "_threads", [threads])
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, 2 * n_in)).astype(np.float32)
    x = x[:, ::2] if strided_x else np.ascontiguousarray(x[:, :n_in])
    w = rng.standard_normal((n_in, n_out)).astype(np.float32)
    b = rng.standard_normal(n_out).astype(np.float32)
    y = np.full((rows, n_out), np.nan, np.float32)
    linear_forward_cpu(x, w, b, y)
    np.testing.assert_allclose(y, ref.linear(x, w, b, "linear"), rtol=1e-4, atol=1e-4)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx, dw, db = np.empty_like(x), np.full_like(w, np.nan), np.empty(n_out, np.float32)
    linear_backward_cpu(x, w, y, dy, dx, dw, db)
    rdx, rdw, rdb = ref.linear_grads(x, w, b, dy, "linear")
    np.testing.assert_allclose(dw, rdw, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dx, rdx, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows,n_in,n_out", [(32, 9, 16), (16, 130, 48), (32, 48, 64), (16, 144, 80), (128, 48, 64), (32, 48, 32)])
@pytest.mark.parametrize("accumulate", [False, True])
def test_linear_backward_micro_kernel_paths_add_or_overwrite(rows, n_in, n_out, accumulate, monkeypatch):
    """Rows a multiple of 16 (and fewer than DX_SIMD_ROWS) with at least DX_SIMD_DEPTH outputs: the input
    gradient runs transposed on the micro-kernels (where they apply) and is transposed into dx; elsewhere
    OpenBLAS; accumulate adds both gradients into what the buffers held."""
    from kernels import _conv_simd
    from kernels import linear as L

    monkeypatch.setattr(_conv_simd, "_threads", [1])
    calls = []
    monkeypatch.setattr(L, "_transpose_into", lambda src, dst, acc, f=L._transpose_into: calls.append(1) or f(src, dst, acc))
    rng = np.random.default_rng(2)
    x = rng.standard_normal((rows, n_in)).astype(np.float32)
    w = rng.standard_normal((n_in, n_out)).astype(np.float32)
    b = rng.standard_normal(n_out).astype(np.float32)
    y = np.empty((rows, n_out), np.float32)
    linear_forward_cpu(x, w, b, y)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    base_x, base_w = rng.standard_normal(x.shape).astype(np.float32), rng.standard_normal(w.shape).astype(np.float32)
    dx, dw, db = base_x.copy(), base_w.copy(), np.zeros(n_out, np.float32)
    linear_backward_cpu(x, w, y, dy, dx, dw, db, accumulate=(accumulate, accumulate, accumulate))
    rdx, rdw, _ = ref.linear_grads(x, w, b, dy, "linear")
    np.testing.assert_allclose(dx, rdx + (base_x if accumulate else 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, rdw + (base_w if accumulate else 0), rtol=1e-4, atol=1e-4)
    micro = _conv_simd.ENABLED and n_in % 16 == 0 and rows < L.DX_SIMD_ROWS and n_out >= L.DX_SIMD_DEPTH
    assert bool(calls) == micro  # which path formed dx
