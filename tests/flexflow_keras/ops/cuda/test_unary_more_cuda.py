"""The unary codes added for keras.ops' arctan, erf and erfinv with backend "cuda" (device arrays, under the
simulator) against backend "cpu", in float64 and float32."""

import numpy as np
import pytest
from test_ops_cuda import check_cuda, r

from flexflow_keras import ops as O


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fn", ["arctan", "erf", "erfinv"])
def test_unary_more(fn, dtype):
    x = np.tanh(r(3, 4)) * 0.97 if fn == "erfinv" else r(3, 4) * 2
    x[0, :2] = (-0.999, 0.9995) if fn == "erfinv" else (0.0, 3.5)  # erfinv's tail branch, erf near 1
    tol = dict(rtol=1e-6, atol=1e-8) if dtype == "float64" else dict(rtol=2e-5, atol=1e-6)
    # (the harness draws float64 output gradients: float32 runs the forward only, as training launches it)
    check_cuda(O.UnaryOp(fn), [x.astype(dtype)], grad=dtype == "float64", **tol)


def test_erfinv_edges():
    x = np.array([[-1.0, 1.0, 1.5, np.nan, 0.0, -0.3]])
    check_cuda(O.UnaryOp("erfinv"), [x], grad=False)
