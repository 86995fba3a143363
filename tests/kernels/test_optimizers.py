"""CPU optimizer kernels against NumPy float64 references of Keras 3's update formulas."""

import numpy as np
import pytest

from kernels import optimizers as k


def _prep(g, gscale, cv):
    g = g * gscale
    return np.clip(g, -cv, cv) if cv > 0 else g


def ref_sgd(w, g, m, lr, mom, nesterov, gscale=1.0, cv=0.0, wd=0.0):
    g = _prep(g, gscale, cv)
    w = w - w * wd
    if m is None:
        return w - lr * g, None
    m = mom * m - lr * g
    return (w + mom * m - lr * g if nesterov else w + m), m


def ref_adam(w, g, m, v, vhat, lr, b1, b2, eps, step, gscale=1.0, cv=0.0, wd=0.0):
    g = _prep(g, gscale, cv)
    m = m + (g - m) * (1 - b1)
    v = v + (g * g - v) * (1 - b2)
    alpha = lr * np.sqrt(1 - b2 ** step) / (1 - b1 ** step)
    w = w - w * wd
    if vhat is not None:
        vhat = np.maximum(vhat, v)
        return w - m * alpha / (np.sqrt(vhat) + eps), m, v, vhat
    return w - m * alpha / (np.sqrt(v) + eps), m, v, None


def ref_rmsprop(w, g, vel, mom_buf, avg, lr, rho, mom, eps, gscale=1.0, cv=0.0, wd=0.0):
    g = _prep(g, gscale, cv)
    vel = rho * vel + (1 - rho) * g * g
    if avg is not None:
        avg = rho * avg + (1 - rho) * g
        denom = vel - avg * avg + eps
    else:
        denom = vel + eps
    inc = lr * g / np.sqrt(denom)
    w = w - w * wd
    if mom_buf is not None:
        mom_buf = mom * mom_buf + inc
        return w - mom_buf, vel, mom_buf, avg
    return w - inc, vel, None, avg


def ref_adagrad(w, g, acc, lr, eps, gscale=1.0, cv=0.0, wd=0.0):
    g = _prep(g, gscale, cv)
    acc = acc + g * g
    w = w - w * wd
    return w - lr * g / np.sqrt(acc + eps), acc


def _arrays(shape, n, seed=0, positive=()):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        a = rng.standard_normal(shape)
        out.append(np.abs(a) if i in positive else a)
    return out


RTOL = 2e-5  # float32 kernel vs float64 reference over a few steps


@pytest.mark.parametrize("momentum,nesterov", [(0.0, False), (0.9, False), (0.9, True)])
@pytest.mark.parametrize("pre", [dict(), dict(gscale=0.5, cv=0.3, wd=0.01)])
def test_sgd_matches_reference(momentum, nesterov, pre):
    w64, m64 = _arrays((7, 5), 2)
    m64 = None if momentum == 0 else m64 * 0
    w32 = w64.astype(np.float32)
    m32 = None if m64 is None else m64.astype(np.float32)
    for s in range(4):
        (g64,) = _arrays((7, 5), 1, seed=10 + s)
        w64, m64 = ref_sgd(w64, g64, m64, 0.1, momentum, nesterov, pre.get("gscale", 1.0), pre.get("cv", 0.0),
                           pre.get("wd", 0.0))
        k.sgd_update_cpu(w32, g64.astype(np.float32), m32, 0.1, momentum, nesterov, pre.get("gscale", 1.0),
                         pre.get("cv", 0.0), pre.get("wd", 0.0))
    np.testing.assert_allclose(w32, w64, rtol=RTOL, atol=1e-6)
    if m32 is not None:
        np.testing.assert_allclose(m32, m64, rtol=RTOL, atol=1e-6)


@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("pre", [dict(), dict(gscale=2.0, cv=0.5, wd=0.004)])
def test_adam_matches_reference(amsgrad, pre):
    (w64,) = _arrays((33,), 1)
    m64, v64 = np.zeros(33), np.zeros(33)
    vh64 = np.zeros(33) if amsgrad else None
    w32, m32, v32 = w64.astype(np.float32), m64.astype(np.float32), v64.astype(np.float32)
    vh32 = None if vh64 is None else vh64.astype(np.float32)
    for s in range(5):
        (g64,) = _arrays((33,), 1, seed=20 + s)
        g64 = g64 * (0.2 if s % 2 else 1.5)  # so AMSGrad's max matters
        w64, m64, v64, vh64 = ref_adam(w64, g64, m64, v64, vh64, 0.01, 0.9, 0.999, 1e-7, s + 1,
                                       pre.get("gscale", 1.0), pre.get("cv", 0.0), pre.get("wd", 0.0))
        k.adam_update_cpu(w32, g64.astype(np.float32), m32, v32, vh32, 0.01, 0.9, 0.999, 1e-7, s + 1,
                          pre.get("gscale", 1.0), pre.get("cv", 0.0), pre.get("wd", 0.0))
    np.testing.assert_allclose(w32, w64, rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(v32, v64, rtol=RTOL, atol=1e-9)
    if amsgrad:
        np.testing.assert_allclose(vh32, vh64, rtol=RTOL, atol=1e-9)


@pytest.mark.parametrize("momentum,centered", [(0.0, False), (0.5, False), (0.0, True), (0.5, True)])
def test_rmsprop_matches_reference(momentum, centered):
    (w64,) = _arrays((4, 3, 2), 1)
    vel64 = np.zeros_like(w64)
    mom64 = np.zeros_like(w64) if momentum > 0 else None
    avg64 = np.zeros_like(w64) if centered else None
    def f(a):
        return None if a is None else a.astype(np.float32)

    w32, vel32, mom32, avg32 = f(w64), f(vel64), f(mom64), f(avg64)
    for s in range(5):
        (g64,) = _arrays(w64.shape, 1, seed=30 + s)
        w64, vel64, mom64, avg64 = ref_rmsprop(w64, g64, vel64, mom64, avg64, 0.01, 0.9, momentum, 1e-7,
                                               wd=0.001)
        k.rmsprop_update_cpu(w32, g64.astype(np.float32), vel32, mom32, avg32, 0.01, 0.9, momentum, 1e-7,
                             wd_lr=0.001)
    np.testing.assert_allclose(w32, w64, rtol=RTOL, atol=1e-6)


def test_adagrad_matches_reference():
    (w64,) = _arrays((50,), 1)
    acc64 = np.full(50, 0.1)
    w32, acc32 = w64.astype(np.float32), acc64.astype(np.float32)
    for s in range(5):
        (g64,) = _arrays((50,), 1, seed=40 + s)
        w64, acc64 = ref_adagrad(w64, g64, acc64, 0.05, 1e-7, cv=1.0)
        k.adagrad_update_cpu(w32, g64.astype(np.float32), acc32, 0.05, 1e-7, clipvalue=1.0)
    np.testing.assert_allclose(w32, w64, rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(acc32, acc64, rtol=RTOL)


def test_float64_weights_stay_float64_exact():
    (w,) = _arrays((10,), 1)
    (g,) = _arrays((10,), 1, seed=3)
    m, v = np.zeros(10), np.zeros(10)
    want, *_ = ref_adam(w.copy(), g, m.copy(), v.copy(), None, 0.01, 0.9, 0.999, 1e-7, 1)
    k.adam_update_cpu(w, g, m, v, None, 0.01, 0.9, 0.999, 1e-7, 1)
    np.testing.assert_allclose(w, want, rtol=1e-13)


def test_sumsq_and_accumulate():
    (g,) = _arrays((6, 7), 1)
    assert k.sumsq_cpu(g.astype(np.float32)) == pytest.approx(float((g.astype(np.float32).astype(np.float64) ** 2).sum()))
    acc = np.ones((6, 7), np.float32)
    k.accumulate_cpu(acc, g.astype(np.float32))
    np.testing.assert_allclose(acc, 1 + g, rtol=1e-6, atol=1e-6)


def test_shape_mismatch_and_noncontiguous_are_errors():
    w = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match="shape"):
        k.sgd_update_cpu(w, np.zeros(16, np.float32), None, 0.1)
    with pytest.raises(ValueError, match="C-contiguous"):
        k.sgd_update_cpu(w.T[::2], np.zeros((2, 4), np.float32), None, 0.1)


def test_cuda_launch_arithmetic():
    assert k.launch_1d(1) == (1, 256)
    assert k.launch_1d(256) == (1, 256)
    assert k.launch_1d(257) == (2, 256)
