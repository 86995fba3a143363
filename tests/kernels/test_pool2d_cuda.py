"""pool2d / global_pool2d CUDA kernels under the Numba CUDA simulator against the float64 reference.

Runs in a subprocess with NUMBA_ENABLE_CUDASIM=1 (FF_CUDA_DEVICE=1 runs it on a real GPU instead).
"""

import os
import sys
import textwrap

import background_runs  # tests/background_runs.py
import pytest
from cuda_launch_log import RECORD_PRELUDE, check_launch_log, with_launch_log  # tests/cuda_launch_log.py

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
""")


def _spec(work):
    env = with_launch_log(dict(os.environ), work / "launches.jsonl")
    env["NUMBA_ENABLE_CUDASIM"] = "0" if env.get("FF_CUDA_DEVICE") == "1" else "1"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return dict(args=[sys.executable, "-c", RECORD_PRELUDE + _SCRIPT], env=env, timeout=600)


SIMULATED = background_runs.Command(_spec)


@pytest.mark.background(SIMULATED)
def test_pool_cuda_kernels_match_reference():
    proc, work = SIMULATED.result()
    log = work / "launches.jsonl"
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("ok") == 6
    check_launch_log(log)
