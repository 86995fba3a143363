"""kernels.activation_loops: each activation's own loop gives what the shared loop (`_act_value` /
`_act_grad`, the scalar functions the CUDA kernels compile too) gives, bit for bit, on ordinary and
special values, in every mode: element-wise, with a bias, keeping the pre-activation, with the bias
gradient's column sums, accumulating."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from kernels import activation_loops as AL
from kernels import activations as A

# Activations whose float32 loops use vector_math (within one unit of the C library: test_vector_math).
_VECTOR_F32 = {A.GELU, A.SILU, A.SOFTPLUS, A.ELU, A.SELU}
_CASES = [A.Activation(A.LINEAR), A.Activation(A.RELU, 0.0, np.inf, 0.0), A.Activation(A.RELU, 0.1, 4.0, 0.5),
          A.Activation(A.LEAKY_RELU, 0.2), A.Activation(A.RELU6), A.Activation(A.SIGMOID), A.Activation(A.TANH),
          A.Activation(A.ELU, 1.0), A.Activation(A.ELU, 0.5), A.Activation(A.SELU), A.Activation(A.GELU),
          A.Activation(A.SILU), A.Activation(A.SOFTPLUS), A.Activation(A.MISH), A.Activation(A.HARD_SIGMOID)]


def _values(dtype, rows=7, cols=40):
    special = [0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 6.0, -6.0, 30.0, -30.0, 100.0, -100.0, np.inf, -np.inf,
               np.nan, 1.0, -1.0, 3.0, -3.0, 4.0]
    rng = np.random.default_rng(7)
    x = np.concatenate([special, rng.standard_normal(rows * cols - len(special)) * 5])
    return x.reshape(rows, cols).astype(dtype)


def _specialised(act, dtype, table, table_f32) -> bool:
    """Whether `act` has a loop of its own for `dtype` (else the shared loop would be compared with itself)."""
    plain_relu = act.code == A.RELU and act.p0 == 0.0 and act.p2 == 0.0 and act.p1 == np.inf
    return plain_relu or act.code in table or (dtype == np.float32 and act.code in table_f32)


def _equal(got, want):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("act", _CASES, ids=lambda a: f"code{a.code}-{a.p0}")
def test_forward_equals_the_shared_loop(act, dtype):
    if dtype == np.float32 and act.code in _VECTOR_F32:
        pytest.skip("vector_math loop: compared with the C library in test_vector_math")
    if not _specialised(act, dtype, AL._FORWARD, AL._FORWARD_F32):
        pytest.skip("no loop of its own: the shared loop runs it")
    x = _values(dtype)
    b = np.linspace(-1, 1, x.shape[1]).astype(dtype)
    for bias in (None, b):
        for keep in ((False, True) if bias is not None else (False,)):
            src, dst = x.copy(), np.empty_like(x)
            src_ref, dst_ref = x.copy(), np.empty_like(x)
            AL.forward(src, bias, dst, keep, act)
            AL._forward_any(src_ref, bias, dst_ref, keep, act.code, act.p0, act.p1, act.p2)
            _equal(dst, dst_ref)
            _equal(src, src_ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("act", _CASES, ids=lambda a: f"code{a.code}-{a.p0}")
def test_backward_equals_the_shared_loop(act, dtype):
    if dtype == np.float32 and act.code in (A.GELU, A.SILU, A.SOFTPLUS):
        pytest.skip("vector_math loop: compared with the C library in test_vector_math")
    if not _specialised(act, dtype, AL._BACKWARD, AL._BACKWARD_F32):
        pytest.skip("no loop of its own: the shared loop runs it")
    plain_relu = act.code == A.RELU and act.p0 == 0.0 and act.p2 == 0.0 and act.p1 == np.inf
    x = _values(dtype)
    y = np.empty_like(x)
    AL._forward_any(x.copy(), None, y, False, act.code, act.p0, act.p1, act.p2)
    dy = _values(dtype)[::-1].copy()  # NaN and inf gradients meet zeros of the derivative too
    for mode in ("db", "write", "accumulate"):
        start = np.linspace(-2, 2, x.size).reshape(x.shape).astype(dtype)
        dx, dx_ref = start.copy(), start.copy()
        db = db_ref = None
        if mode == "db":
            db, db_ref = np.empty(x.shape[1]), np.empty(x.shape[1])
        AL.backward(dy, x, y, dx, db, mode == "accumulate", act)
        AL._backward_any(dy, x, y, dx_ref, db_ref, mode == "accumulate", act.code, act.p0, act.p1, act.p2)
        if plain_relu and mode == "db":  # Dense's fused ReLU: 0 where x <= 0, whatever dy holds
            dx_ref = np.where(x > 0, dx_ref, np.zeros_like(dx_ref))
            db_ref = dx_ref.astype(np.float64).sum(axis=0)
        _equal(dx, dx_ref)
        if db is not None:
            _equal(db, db_ref)


def test_each_activation_compiles_its_own_loop():
    """A ReLU's first forward and backward compile the ReLU loops only (when one function held every
    activation's loop, a Dense(relu)'s first call compiled them all: 26 s with a cold cache)."""
    code = (
        "import numpy as np\n"
        "from numba.core.registry import CPUDispatcher\n"
        "from kernels import activation_loops as AL, activations as A\n"
        "x = np.ones((2, 3), np.float32); y = np.empty_like(x)\n"
        "relu = A.resolve_activation('relu')\n"
        "AL.forward(x, None, y, False, relu)\n"
        "AL.backward(x, x, y, np.empty_like(x), np.empty(3), False, relu)\n"
        "print(sorted(n for n, f in vars(AL).items() if isinstance(f, CPUDispatcher) and f.signatures))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['_b_relu_fused', '_f_relu_plain']"
