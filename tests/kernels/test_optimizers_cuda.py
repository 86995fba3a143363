"""CUDA optimizer kernels under the Numba CUDA simulator, compared with the CPU kernels on tiny shapes.

The simulator must be chosen before numba.cuda is first imported, so the checks run in a subprocess
with NUMBA_ENABLE_CUDASIM=1 (a run with a real GPU can set the variable to 0 to use the device).
"""

import textwrap

import pytest
from cuda_launch_log import simulated_command, simulated_stdout  # tests/cuda_launch_log.py

_SCRIPT = textwrap.dedent("""
    import numpy as np
    from numba import cuda
    from kernels import optimizers as k

    rng = np.random.default_rng(0)
    shape = (5, 3)

    def arr(positive=False):
        a = rng.standard_normal(shape).astype(np.float32)
        return np.abs(a) if positive else a

    def run(name, host_args, dev_idx, fn_cpu, fn_cuda, scalars):
        cpu = [None if a is None else a.copy() for a in host_args]
        dev = [None if a is None else cuda.to_device(a.copy()) for a in host_args]
        for step in (1, 2, 3):
            fn_cpu(*cpu, *scalars(step))
            fn_cuda(*dev, *scalars(step))
        for i in dev_idx:
            got = dev[i].copy_to_host()
            np.testing.assert_allclose(got, cpu[i], rtol=1e-5, atol=1e-6, err_msg=name)
        print("ok", name)

    pre = (0.7, 0.4, 0.01)
    run("sgd", [arr(), arr(), np.zeros(shape, np.float32)], [0, 2], k.sgd_update_cpu, k.sgd_update_cuda,
        lambda s: (0.1, 0.9, True) + pre)
    run("sgd_plain", [arr(), arr(), None], [0], k.sgd_update_cpu, k.sgd_update_cuda,
        lambda s: (0.1, 0.0, False) + pre)
    for ams in (False, True):
        z = [np.zeros(shape, np.float32) for _ in range(3)]
        run(f"adam{ams}", [arr(), arr(), z[0], z[1], z[2] if ams else None], [0, 2, 3], k.adam_update_cpu,
            k.adam_update_cuda, lambda s: (0.01, 0.9, 0.999, 1e-7, s) + pre)
    for mom, cen in ((0.0, False), (0.5, True)):
        z = [np.zeros(shape, np.float32) for _ in range(3)]
        run(f"rmsprop{mom}{cen}", [arr(), arr(), z[0], z[1] if mom else None, z[2] if cen else None], [0, 2],
            k.rmsprop_update_cpu, k.rmsprop_update_cuda, lambda s: (0.01, 0.9, mom, 1e-7) + pre)
    run("adagrad", [arr(), arr(), np.full(shape, 0.1, np.float32)], [0, 2], k.adagrad_update_cpu,
        k.adagrad_update_cuda, lambda s: (0.05, 1e-7) + pre)

    g = arr()
    assert abs(k.sumsq_cuda(cuda.to_device(g)) - k.sumsq_cpu(g)) < 1e-5 * k.sumsq_cpu(g)
    big = rng.standard_normal(1000).astype(np.float32)
    assert abs(k.sumsq_cuda(cuda.to_device(big)) - k.sumsq_cpu(big)) < 1e-4 * k.sumsq_cpu(big)
    acc = cuda.to_device(np.ones(shape, np.float32))
    k.accumulate_cuda(acc, cuda.to_device(g))
    np.testing.assert_allclose(acc.copy_to_host(), 1 + g, rtol=1e-6, atol=1e-6)
    k.fill_cuda(acc, 0.0)
    assert not acc.copy_to_host().any()
    print("ok helpers")

    # The optimizer classes on backend "cuda" give the CPU's numbers (clipnorm, accumulation included).
    from flexflow_keras import optimizers
    for make in (lambda: optimizers.Adam(0.01, clipnorm=0.5), lambda: optimizers.RMSprop(0.01, momentum=0.5),
                 lambda: optimizers.SGD(0.1, momentum=0.9, global_clipnorm=1.0, weight_decay=0.01),
                 lambda: optimizers.Adagrad(0.05, gradient_accumulation_steps=2)):
        results = []
        for backend in ("cpu", "cuda"):
            opt = make()
            w_rng = np.random.default_rng(8)
            w = [w_rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
            slots = [[np.full(a.shape, v, np.float32) for _, v in opt.slot_specs(a.shape)] for a in w]
            if backend == "cuda":
                w = [cuda.to_device(a) for a in w]
                slots = [[cuda.to_device(s) for s in ss] for ss in slots]
            g_rng = np.random.default_rng(9)
            for it in range(4):
                gs = [g_rng.standard_normal(shape).astype(np.float32) * 3 for _ in w]
                if backend == "cuda":
                    gs = [cuda.to_device(g) for g in gs]
                opt.apply(backend, it, opt.learning_rate_at(it), w, gs, slots)
            results.append([a if backend == "cpu" else a.copy_to_host() for a in w])
        for c, d in zip(*results):
            np.testing.assert_allclose(d, c, rtol=1e-5, atol=1e-6)
    print("ok optimizers")
""")


SIMULATED = simulated_command(_SCRIPT)


@pytest.mark.background(SIMULATED)
def test_cuda_kernels_match_cpu_under_simulator():
    out = simulated_stdout(SIMULATED)
    assert out.count("ok") == 9, out
