"""kernels/vector_math.py: the branch-free exp and erf against the C library's (math), the GELU loops that
use them against the scalar `act_value`/`act_grad`, and that those loops vectorise (the reason they
exist: math.erf in a loop is a call per value, 19 ns here against 5-6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

from kernels import activation_loops as AL
from kernels import activations as A
from kernels import vector_math as V


@njit(error_model="numpy", fastmath={"contract"})
def _exp_all(x, y):
    for i in range(x.size):
        y[i] = V.exp(x[i])


@njit(error_model="numpy", fastmath={"contract"})
def _erf_all(x, y):
    for i in range(x.size):
        y[i] = V.erf(x[i])


def test_exp_matches_the_c_library_to_two_units():
    x = np.concatenate([np.linspace(-708, 709, 200_001), np.linspace(-3, 3, 100_001), [0.0, -0.0, 1e-300]])
    got = np.empty_like(x)
    _exp_all(x, got)
    want = np.array([math.exp(v) for v in x])
    assert np.max(np.abs(got / want - 1)) <= 4.5e-16
    clamped = np.empty(4)
    _exp_all(np.array([-1000.0, 1000.0, -np.inf, np.inf]), clamped)
    np.testing.assert_allclose(clamped, [math.exp(-708), math.exp(709)] * 2, rtol=4.5e-16)  # no inf, no 0
    nan = np.empty(1)
    _exp_all(np.array([np.nan]), nan)
    assert np.isnan(nan).all()
    _erf_all(np.array([np.nan]), nan)
    assert np.isnan(nan).all()


@njit(error_model="numpy", fastmath={"contract"})
def _log1p01_all(x, y):
    for i in range(x.size):
        y[i] = V.log1p01(x[i])


def test_log1p01_matches_the_c_library_on_zero_to_one():
    x = np.concatenate([np.linspace(0, 1, 200_001), np.logspace(-300, 0, 3001), [0.0, 1e-320]])
    got = np.empty_like(x)
    _log1p01_all(x, got)
    want = np.array([math.log1p(v) for v in x])
    assert np.max(np.abs(got - want) / np.maximum(want, 1e-320)) < 2e-14
    nan = np.empty(1)
    _log1p01_all(np.array([np.nan]), nan)
    assert np.isnan(nan).all()


def test_erf_matches_the_c_library():
    x = np.concatenate([np.linspace(-12, 12, 400_001), np.logspace(-300, 0.5, 2001), -np.logspace(-300, 0.5, 2001),
                        [0.0, -0.0, 1.0, -1.0, 10.0, -10.0, np.inf, -np.inf]])
    got = np.empty_like(x)
    _erf_all(x, got)
    want = np.array([math.erf(v) for v in x])
    assert np.max(np.abs(got - want)) < 1e-11
    small = np.abs(x) < 1
    assert np.max(np.abs(got[small] - want[small]) / np.maximum(np.abs(want[small]), 1e-300)) < 1e-11


def _ulps(a, b):
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


@njit
def _scalar(code, x, y):
    for i in range(x.size):
        y[i] = A.act_value(code, x[i], 0.0, 0.0, 0.0)


@njit
def _scalar_grad(code, x, y, g):
    for i in range(x.size):
        g[i] = A.act_grad(code, x[i], y[i], 0.0, 0.0, 0.0)


def test_gelu_loops_give_the_scalar_functions_results():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(200_000) * 3, np.linspace(-12, 12, 20_001),
                        [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
    want, want_g = np.empty_like(x), np.empty_like(x)
    _scalar(A.GELU, x, want)
    _scalar_grad(A.GELU, x, want, want_g)
    got = np.empty_like(x)
    A.activation_forward_cpu(x, got, A.Activation(A.GELU))
    finite = np.isfinite(want)
    assert (np.isnan(got) == np.isnan(want)).all() and (got[~finite] == want[~finite])[~np.isnan(want[~finite])].all()
    assert _ulps(got[finite], want[finite]).max() <= 1 and (_ulps(got[finite], want[finite]) > 0).mean() < 1e-4
    dy = rng.standard_normal(x.size).astype(np.float32)
    dx = np.empty_like(x)
    A.activation_backward_cpu(x, got, dy, dx, A.Activation(A.GELU))
    ref = (dy.astype(np.float64) * want_g).astype(np.float32)
    ok = np.isfinite(ref)
    np.testing.assert_allclose(dx[ok], ref[ok], rtol=3e-7, atol=1e-30)
    # the fused Dense: bias + GELU forward, kept pre-activation, and its backward's dz and db
    rows = x[:200_000].reshape(400, 500)
    b = rng.standard_normal(500).astype(np.float32)
    for keep in (False, True):
        src, dst = rows.copy(), np.empty_like(rows)
        AL.forward(src, b, dst, keep, A.Activation(A.GELU, 0.0, 0.0, 0.0))
        pre = rows + b
        ref_y = np.empty_like(pre.ravel())
        _scalar(A.GELU, pre.ravel(), ref_y)
        assert _ulps(dst.ravel(), ref_y).max() <= 1
        if keep:
            np.testing.assert_array_equal(src, pre)
    dyr = dy[:200_000].reshape(400, 500)
    dz, db = np.empty_like(pre), np.empty(500)
    AL.backward(dyr, pre, dst, dz, db, False, A.Activation(A.GELU, 0.0, 0.0, 0.0))
    ref_g = np.empty_like(pre.ravel())
    _scalar_grad(A.GELU, pre.ravel(), ref_y, ref_g)
    ref_dz = (dyr.astype(np.float64) * ref_g.reshape(400, 500)).astype(np.float32)
    np.testing.assert_allclose(dz, ref_dz, rtol=3e-7, atol=1e-30)
    np.testing.assert_allclose(db, ref_dz.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)


@njit(inline="always")
def _libm_gelu(v):
    return A.act_value(A.GELU, v, 0.0, 0.0, 0.0)


@njit(inline="always")
def _libm_gelu_grad(v):
    return A.act_grad(A.GELU, v, v, 0.0, 0.0, 0.0)


def _loop(value, grad):
    def loop(x, y, g):
        for i in range(x.size):
            y[i] = value(x[i])
            g[i] = grad(x[i])
    return loop


def _vector_code(fn) -> bool:
    kernel = njit(nogil=True, error_model="numpy")(fn)  # a fresh compile: a cached one shows no IR
    x = np.ones(16, np.float32)
    kernel(x, x.copy(), x.copy())
    llvm = "".join(kernel.inspect_llvm().values())
    return "<4 x double>" in llvm or "<8 x double>" in llvm


def test_gelu_loops_vectorise():
    """The loops over GELU values compile to float64 vector code (four lanes on AVX2), which math.erf's
    call per value prevents."""
    assert _vector_code(_loop(A.gelu_value, A.gelu_grad))
    assert not _vector_code(_loop(_libm_gelu, _libm_gelu_grad))


def test_softmax_over_the_last_axis_gives_the_row_functions_results():
    """softmax.py's float32 last-axis path (vector_math.exp, vectorised) against the per-row `_forward`
    it replaces there: within 2 units in the last place, NaN and infinity rows alike, log-softmax too."""
    from kernels import softmax as S

    rng = np.random.default_rng(1)
    x = (rng.standard_normal((8, 4, 16, 64)) * 4).astype(np.float32)
    x[0, 0, 0, 3], x[0, 0, 1, 5], x[0, 0, 2, :] = np.nan, np.inf, -np.inf
    for log in (False, True):
        got, want = np.empty_like(x), np.empty_like(x)
        (S.log_softmax_forward_cpu if log else S.softmax_forward_cpu)(x, got)
        S._forward(x.reshape(-1, 64, 1), want.reshape(-1, 64, 1), log)
        assert (np.isnan(got) == np.isnan(want)).all()
        fin = np.isfinite(want)
        if log:
            np.testing.assert_allclose(got[fin], want[fin], rtol=2e-7, atol=2e-6)
        else:
            assert _ulps(got[fin], want[fin]).max() <= 2
            np.testing.assert_allclose(got[1:].sum(-1, dtype=np.float64), 1.0, rtol=1e-6)  # rows of plain values


@njit
def _scalar_p(code, p0, x, y, g):
    for i in range(x.size):
        y[i] = A.act_value(code, x[i], p0, 0.0, 0.0)
        g[i] = A.act_grad(code, x[i], y[i], p0, 0.0, 0.0)


@njit
def _grad_p(code, p0, x, y, g):
    for i in range(x.size):
        g[i] = A.act_grad(code, x[i], y[i], p0, 0.0, 0.0)


def _scalar64(code, p0, x):
    """float32 y from the float64 forms, and the gradient from x and that y (ELU's and SELU's read y, as
    TensorFlow's EluGrad reads the outputs), in float64."""
    y, g = np.empty(x.size), np.empty(x.size)
    _scalar_p(code, p0, x.astype(np.float64), y, g)
    y32 = y.astype(np.float32)
    _grad_p(code, p0, x.astype(np.float64), y32.astype(np.float64), g)
    return y32, g


@pytest.mark.parametrize("name, code, p0", [("silu", A.SILU, 0.0), ("elu", A.ELU, 1.0), ("elu alpha 0.5", A.ELU, 0.5),
                                            ("selu", A.SELU, 0.0), ("softplus", A.SOFTPLUS, 0.0)])
def test_exp_based_loops_give_the_scalar_functions_results(name, code, p0):
    """SiLU, ELU, SELU and softplus into float32 with vector_math (activation layers and the fused Dense) against
    the C library's scalar forms: within one unit, non-finite inputs as the scalar forms give them."""
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(100_000) * 4, np.linspace(-800, 800, 4001), np.linspace(-1e-4, 1e-4, 2001),
                        [0.0, -0.0, 1e-30, -1e-30, np.inf, -np.inf, np.nan]]).astype(np.float32)
    # the C library's forms in float64 (a float32 input would make math.exp a float32 expf in Numba, whose
    # denormal intermediates lose digits that the float64 loops keep)
    want, want_g = _scalar64(code, p0, x)
    act = A.Activation(code, p0)
    got = np.empty_like(x)
    A.activation_forward_cpu(x, got, act)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    assert _ulps(got[finite], want[finite]).max() <= 1, name
    dy = rng.standard_normal(x.size).astype(np.float32)
    dx = np.empty_like(x)
    A.activation_backward_cpu(x, want, dy, dx, act)
    ref = (dy.astype(np.float64) * want_g).astype(np.float32)
    ok = np.isfinite(ref)
    np.testing.assert_array_equal(np.isnan(dx), np.isnan(ref))
    np.testing.assert_allclose(dx[ok], ref[ok], rtol=3e-7, atol=1e-30)
    rows = x[:100_000].reshape(200, 500)  # the fused Dense: bias + activation, then dz and db
    b = rng.standard_normal(500).astype(np.float32)
    for keep in (False, True):
        src, dst = rows.copy(), np.empty_like(rows)
        AL.forward(src, b, dst, keep, A.Activation(code, p0, 0.0, 0.0))
        pre = rows + b
        ref_y, ref_g = _scalar64(code, p0, pre.ravel())
        assert _ulps(dst.ravel(), ref_y).max() <= 1, (name, keep)
    dyr = dy[:100_000].reshape(200, 500)
    dz, db = np.empty_like(pre), np.empty(500)
    AL.backward(dyr, pre, ref_y.reshape(pre.shape), dz, db, False, A.Activation(code, p0, 0.0, 0.0))
    ref_dz = (dyr.astype(np.float64) * ref_g.reshape(pre.shape)).astype(np.float32)
    np.testing.assert_allclose(dz, ref_dz, rtol=3e-7, atol=1e-30)


def test_exp_based_loops_vectorise():
    assert _vector_code(_loop(A.silu_value, A.silu_grad))
    assert _vector_code(_loop(A.softplus_value, A.softplus_grad))
    assert _vector_code(_loop(njit(lambda v: A.elu_value(v, 1.0)), njit(lambda v: A.elu_value(v, 0.5))))


@pytest.mark.parametrize("code", [A.SILU, A.SOFTPLUS, A.GELU])
def test_accumulated_gradient_adds_what_the_overwriting_loop_writes(code):
    """An Activation layer whose input's gradient accumulates (the input has other consumers) runs the
    accumulate=True loop: it adds the same derivative as the overwriting loop (silu_grad, softplus_grad,
    gelu_grad, with vector_math); for SiLU the C library's float32 expf it ran lost up to 51 units of the
    small gradients below x = -87 (x = -100: -3.746e-42 against -3.683e-42), and GELU's vector derivative
    gave +-inf at +-inf where act_grad (and TensorFlow) give NaN."""
    x = np.concatenate([np.linspace(-110, 110, 4401), np.random.default_rng(2).standard_normal(10_000) * 4,
                        [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
    y = np.empty_like(x)
    act = A.Activation(code)
    A.activation_forward_cpu(x, y, act)
    dy = np.random.default_rng(3).standard_normal(x.size).astype(np.float32)
    written = np.empty_like(x)
    A.activation_backward_cpu(x, y, dy, written, act)
    added = np.zeros_like(x)
    A.activation_backward_cpu(x, y, dy, added, act, accumulate=True)
    np.testing.assert_array_equal(added, written)  # 0 + (-0.0) is 0.0, which compares equal


@pytest.mark.parametrize("code, p0", [(A.SOFTPLUS, 0.0), (A.ELU, 1.0), (A.SELU, 0.0)])
def test_vector_derivatives_of_from_output_activations_read_only_y(code, p0):
    """For an activation whose derivative comes from its output (`grad_from_output`), fused ops keep no
    pre-activation and the second-order tape passes what it has as x: the vector loops must read y only.
    softplus_grad read x at first, which broke second derivatives through Dense(softplus)."""
    act = A.Activation(code, p0)
    assert A.grad_from_output(act)
    x = (np.random.default_rng(4).standard_normal(5000) * 4).astype(np.float32)
    y = np.empty_like(x)
    A.activation_forward_cpu(x, y, act)
    dy = np.ones_like(x)
    want, got = np.empty_like(x), np.empty_like(x)
    A.activation_backward_cpu(x, y, dy, want, act)
    A.activation_backward_cpu(np.full_like(x, np.nan), y, dy, got, act)
    np.testing.assert_array_equal(got, want)
    dz, db = np.empty((50, 100), np.float32), np.empty(100)
    AL.backward(dy.reshape(50, 100), np.full((50, 100), np.nan, np.float32), y.reshape(50, 100), dz, db, False,
                act)
    np.testing.assert_array_equal(dz.ravel(), want)
