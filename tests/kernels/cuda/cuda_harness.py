"""Run a CPU kernel and its CUDA twin on the same data and compare every output buffer."""

import numpy as np


def run_pair(cpu_fn, cuda_fn, make_args, rtol=1e-5, atol=1e-6):
    """`make_args()` returns fresh argument lists; array arguments go to the device for `cuda_fn` and the
    arrays each variant wrote are compared (outputs are the arguments whose contents changed on the CPU).
    Returns the CPU result."""
    from numba import cuda

    host = make_args()
    before = [a.copy() if isinstance(a, np.ndarray) else None for a in host]
    cpu_ret = cpu_fn(*host)
    dev_args = make_args()
    dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in dev_args]
    cuda_ret = cuda_fn(*dev)
    assert cpu_ret == cuda_ret or (cpu_ret is None and cuda_ret is None), (cpu_ret, cuda_ret)
    checked = 0
    for h, b, d in zip(host, before, dev, strict=True):
        if isinstance(h, np.ndarray) and not np.array_equal(h, b, equal_nan=True):
            np.testing.assert_allclose(d.copy_to_host(), h, rtol=rtol, atol=atol)
            checked += 1
    assert checked, "the CPU kernel wrote nothing"
    return host
