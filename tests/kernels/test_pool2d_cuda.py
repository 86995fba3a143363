"""pool2d / global_pool2d CUDA kernels under the Numba CUDA simulator against the float64 reference.

Runs in a subprocess with NUMBA_ENABLE_CUDASIM=1 (FF_CUDA_DEVICE=1 runs it on a real GPU instead).
"""

import textwrap

import pytest
from cuda_launch_log import simulated_command, simulated_stdout  # tests/cuda_launch_log.py

_SCRIPT = textwrap.dedent("""
    import numpy as np
    from numba import cuda
    from kernels import pool2d as P

    rng = np.random.default_rng(0)
    for shape, ps, st, pad in [((2, 5, 7, 3), (2, 2), None, "valid"), ((1, 5, 5, 2), (3, 2), (2, 1), "same")]:
        x = rng.standard_normal(shape).astype(np.float32)
        geo = P.pool_geometry(shape, ps, st, pad)
        for mode in ("max", "avg"):
            want = P.pool2d_reference(x, geo[:2], geo[2:4], pad, mode)
            out = cuda.device_array(want.shape, np.float32)
            argmax = cuda.device_array(want.shape, np.int32)
            dx = cuda.to_device(x)
            P.pool2d_forward_cuda(dx, out, ps, st, pad, mode, argmax)
            np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-6, atol=1e-6)
            gy = rng.standard_normal(want.shape).astype(np.float32)
            gwant = P.pool2d_backward_reference(x, gy, geo[:2], geo[2:4], pad, mode)
            for accumulate in (False, True):
                gx = cuda.to_device(np.ones_like(x))
                P.pool2d_backward_cuda(dx, cuda.to_device(gy), gx, ps, st, pad, mode, argmax, accumulate)
                np.testing.assert_allclose(gx.copy_to_host() - accumulate, gwant, rtol=1e-6, atol=1e-6)
            print("ok pool", shape, mode)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    for mode in ("max", "avg"):
        want = P.global_pool2d_reference(x, mode)
        out = cuda.device_array(want.shape, np.float32)
        argmax = cuda.device_array(want.shape, np.int32)
        P.global_pool2d_forward_cuda(cuda.to_device(x), out, mode, argmax)
        np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-6, atol=1e-6)
        gy = rng.standard_normal(want.shape).astype(np.float32)
        gx = cuda.to_device(np.ones_like(x))
        P.global_pool2d_backward_cuda(cuda.to_device(x), cuda.to_device(gy), gx, mode, argmax, True)
        gwant = P.global_pool2d_backward_reference(x, gy, mode)
        np.testing.assert_allclose(gx.copy_to_host() - 1, gwant, rtol=1e-6, atol=1e-6)
        print("ok global", mode)
    x = np.array([[[[2.0, 1.0], [2.0, -1.0]], [[0.0, -1.0], [2.0, -1.0]]]], np.float32)  # tied maxima
    out, argmax = cuda.device_array((1, 2), np.float32), cuda.device_array((1, 2), np.int32)
    P.global_pool2d_forward_cuda(cuda.to_device(x), out, "max", argmax)
    gx = cuda.to_device(np.zeros_like(x))
    P.global_pool2d_backward_cuda(cuda.to_device(x), cuda.to_device(np.array([[6.0, 3.0]], np.float32)), gx,
                                  "max", argmax, False)
    want = np.array([[[[2.0, 3.0], [2.0, 0.0]], [[0.0, 0.0], [2.0, 0.0]]]], np.float32)
    np.testing.assert_allclose(gx.copy_to_host(), want)
    print("ok global ties")
    x[0, 1, 0, 0] = np.nan  # a NaN maximum: NaN, and NaN gradients for its channel (TensorFlow's reduce_max)
    P.global_pool2d_forward_cuda(cuda.to_device(x), out, "max", argmax)
    np.testing.assert_array_equal(out.copy_to_host(), [[np.nan, 1.0]])
    P.global_pool2d_backward_cuda(cuda.to_device(x), cuda.to_device(np.array([[6.0, 3.0]], np.float32)), gx,
                                  "max", argmax, False)
    want[..., 0] = np.nan
    np.testing.assert_array_equal(gx.copy_to_host(), want)
    print("ok global nan")
    nan, inf = np.nan, np.inf  # windowed max: NaN skipped in the value, kept as a first-position argmax (the CPU's)
    wins = [[nan, 1, 2, .5], [1, nan, 2, .5], [nan, nan, nan, nan], [nan, -inf, -inf, -inf], [-inf] * 4, [3, 1, 2, 0]]
    x = np.ascontiguousarray(np.array(wins, np.float32).T.reshape(1, 2, 2, len(wins)))
    for ps, st in (((2, 2), None), ((2, 1), (1, 1))):
        geo = P.pool_geometry(x.shape, ps, st)
        want, want_arg = np.empty((1, geo[4], geo[5], x.shape[3]), np.float32), np.empty((1, geo[4], geo[5], x.shape[3]), np.int32)
        P.pool2d_forward_cpu(x, want, ps, st, "valid", "max", want_arg)
        out, argmax = cuda.device_array(want.shape, np.float32), cuda.device_array(want.shape, np.int32)
        P.pool2d_forward_cuda(cuda.to_device(x), out, ps, st, "valid", "max", argmax)
        np.testing.assert_array_equal(out.copy_to_host(), want)
        np.testing.assert_array_equal(argmax.copy_to_host(), want_arg)
    print("ok window nan")
""")


SIMULATED = simulated_command(_SCRIPT, timeout=600)


@pytest.mark.background(SIMULATED)
def test_pool_cuda_kernels_match_reference():
    assert simulated_stdout(SIMULATED).count("ok") == 9
