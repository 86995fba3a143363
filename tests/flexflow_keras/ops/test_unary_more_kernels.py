"""The unary kernel codes behind keras.ops' arctan, erf and erfinv (kernels/elementwise.py): forward against
float64 references, backward against central differences (through `UnaryOp` and the op harness), and
erfinv's edges. No TensorFlow needed."""

import math

import numpy as np
import pytest
from op_harness import check_op

from flexflow_keras.ops.math_ops import UnaryOp
from kernels import elementwise as kew

rng = np.random.default_rng(7)
_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _erfinv_reference(y):
    """erfinv by bisection (float64, 80 halvings), on erfc(t) > 1 - |y| (exact near 1, where erf is flat)."""
    a = np.abs(np.asarray(y, np.float64))
    lo, hi = np.zeros_like(a), np.full_like(a, 9.0)
    for _ in range(80):
        mid = (lo + hi) / 2
        below = _erfc(mid) > 1 - a  # erf(mid) < a
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.copysign((lo + hi) / 2, y)


@pytest.mark.parametrize("fn,ref,x", [
    ("arctan", np.arctan, rng.standard_normal((4, 5)) * 3),
    ("erf", _erf, rng.standard_normal((4, 5)) * 2),
    ("erfinv", _erfinv_reference, np.tanh(rng.standard_normal((4, 5))) * 0.999),
])
def test_unary_op_forward_and_gradient(fn, ref, x):
    check_op(UnaryOp(fn), [x], ref=ref, rtol=1e-12, atol=1e-13, grad_rtol=1e-5, grad_atol=1e-6, shards=2)


def test_erfinv_accuracy_and_tails():
    x = np.concatenate([np.linspace(-0.999999, 0.999999, 2001), 1 - np.logspace(-16, -1, 60), -1 + np.logspace(-16, -1, 60)])
    y = np.empty_like(x)
    kew.unary_forward_cpu(kew.ERFINV, x, y)
    np.testing.assert_allclose(y, _erfinv_reference(x), rtol=1e-13, atol=1e-15)
    x32 = x[np.abs(x.astype(np.float32)) < 1].astype(np.float32)
    y32 = np.empty_like(x32)
    kew.unary_forward_cpu(kew.ERFINV, x32, y32)  # computed in float64, rounded once
    np.testing.assert_allclose(y32, _erfinv_reference(x32.astype(np.float64)), rtol=2e-7, atol=1e-7)


def test_erfinv_edges():
    x = np.array([-1.0, 1.0, 1.5, -2.0, np.nan, 0.0])
    y = np.empty_like(x)
    kew.unary_forward_cpu(kew.ERFINV, x, y)
    assert y[0] == -np.inf and y[1] == np.inf and y[5] == 0.0
    assert np.isnan(y[2:5]).all()


def test_unary_names_are_numpy_or_listed_apart():
    # UNARY's names are NumPy ufuncs (tests/kernels take them as the reference); erf and erfinv are not
    assert all(hasattr(np, n) or n in ("rsqrt", "clip", "identity", "stop_gradient", "round") for n in kew.UNARY)
    assert set(kew.NON_NUMPY_UNARY) == {"erf", "erfinv"} and not set(kew.NON_NUMPY_UNARY) & set(kew.UNARY)
    with pytest.raises(ValueError, match="unknown function 'erfc'"):
        UnaryOp("erfc")
