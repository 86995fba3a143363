"""conv2d CUDA kernels under the Numba CUDA simulator against the float64 reference, on tiny shapes.

The simulator must be chosen before numba.cuda is first imported, so the checks run in a subprocess
with NUMBA_ENABLE_CUDASIM=1 (on a machine with a GPU, set FF_CUDA_DEVICE=1 to run them on the device).
"""

import textwrap

import pytest
from cuda_launch_log import simulated_command, simulated_stdout  # tests/cuda_launch_log.py

_SCRIPT = textwrap.dedent("""
    import numpy as np
    from numba import cuda
    from kernels import conv2d as K

    rng = np.random.default_rng(0)

    def check(n, h, w, c, kh, kw, co, strides, padding, activation, accumulate):
        x = rng.standard_normal((n, h, w, c)).astype(np.float32)
        k = (rng.standard_normal((kh, kw, c, co)) / np.sqrt(kh * kw * c)).astype(np.float32)
        b = rng.standard_normal(co).astype(np.float32)
        want = K.conv2d_reference(x, k, b, strides, padding, activation)
        out = cuda.device_array(want.shape, np.float32)
        pre = cuda.device_array(want.shape, np.float32) if K.needs_pre_activation(activation) else None
        dx_, dk_, db_ = (cuda.to_device(a) for a in (x, k, b))
        K.conv2d_forward_cuda(dx_, dk_, db_, out, strides, padding, activation, pre_activation=pre)
        np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-4, atol=1e-5)
        gy = rng.standard_normal(want.shape).astype(np.float32)
        dx, dk, db = K.conv2d_backward_reference(x, k, b, gy, strides, padding, activation)
        base = 1.0 if accumulate else np.nan
        gx, gk, gb = (cuda.to_device(np.full(a.shape, base, np.float32)) for a in (x, k, b))
        K.conv2d_backward_cuda(dx_, dk_, out, cuda.to_device(gy), gx, gk, gb, strides, padding, activation,
                               pre_activation=pre, accumulate_x=accumulate, accumulate_kernel=accumulate,
                               accumulate_bias=accumulate)
        shift = 1.0 if accumulate else 0.0
        for got, ref, what in ((gx, dx, "grad_x"), (gk, dk, "grad_kernel"), (gb, db, "grad_bias")):
            np.testing.assert_allclose(got.copy_to_host() - shift, ref, rtol=1e-4, atol=1e-5, err_msg=what)
        print("ok", (n, h, w, c, kh, kw, co, strides, padding, activation, accumulate))

    check(2, 5, 4, 3, 3, 3, 4, (1, 1), "valid", "relu", False)
    check(1, 5, 5, 2, 3, 2, 3, (2, 1), "same", "tanh", True)
    check(1, 4, 5, 17, 2, 2, 18, (1, 1), "same", "gelu", False)  # depth 68 and 18 channels span tiles
    check(1, 3, 3, 1, 1, 1, 2, (1, 1), "valid", None, True)
""")


SIMULATED = simulated_command(_SCRIPT, timeout=600)


@pytest.mark.background(SIMULATED)
def test_conv2d_cuda_kernels_match_reference():
    assert simulated_stdout(SIMULATED).count("ok") == 4
