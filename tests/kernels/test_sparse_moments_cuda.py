"""The per-lookup moment's CUDA kernels under the Numba CUDA simulator, against the CPU kernels: the
embedding's scatter of squared / absolute gradient rows, and every optimizer update that reads a moment
(in a subprocess: the simulator must be chosen before numba.cuda is first imported)."""

import textwrap

import pytest
from cuda_launch_log import simulated_command, simulated_stdout  # tests/cuda_launch_log.py

_SCRIPT = textwrap.dedent("""
    import numpy as np
    from numba import cuda
    from flexflow_keras import optimizers
    from kernels import embedding as E

    rng = np.random.default_rng(0)
    ids = rng.integers(0, 9, (3, 5))
    ids[:, :2] = 4
    dy = rng.standard_normal((3, 5, 4)).astype(np.float32)
    for power in (1, 2):
        for row_offset, rows in ((0, 9), (3, 4)):
            cpu = np.zeros((rows, 4), np.float32)
            E.embedding_backward_moment_cpu(ids, dy, cpu, row_offset=row_offset, power=power)
            E.embedding_backward_moment_cpu(ids, dy, cpu, True, row_offset=row_offset, power=power)
            dev = cuda.to_device(np.full((rows, 4), 5.0, np.float32))
            E.embedding_backward_moment_cuda(cuda.to_device(ids), cuda.to_device(dy), dev, row_offset=row_offset,
                                             power=power)
            E.embedding_backward_moment_cuda(cuda.to_device(ids.astype(np.float32)), cuda.to_device(dy), dev, True,
                                             row_offset=row_offset, power=power)
            np.testing.assert_allclose(dev.copy_to_host(), cpu, rtol=1e-5, atol=1e-6)
    print("ok embedding")

    shape = (5, 3)
    makers = {
        "adam": lambda: optimizers.Adam(0.01),
        "amsgrad": lambda: optimizers.Adam(0.01, amsgrad=True),
        "rmsprop": lambda: optimizers.RMSprop(0.01, momentum=0.5, centered=True),
        "adagrad": lambda: optimizers.Adagrad(0.05),
        "nadam": lambda: optimizers.Nadam(0.01),
        "adamax": lambda: optimizers.Adamax(0.01),
        "adadelta": lambda: optimizers.Adadelta(1.0),
        "ftrl": lambda: optimizers.Ftrl(0.1, l1_regularization_strength=0.05),
        "lamb": lambda: optimizers.Lamb(0.01),
        "adafactor": lambda: optimizers.Adafactor(0.05),
        "schedule_free": lambda: optimizers.ScheduleFreeAdamW(0.01),
    }
    for name, make in makers.items():
        results = []
        for backend in ("cpu", "cuda"):
            opt = make()
            w = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
            slots = [w.copy() if v is None else np.full(opt.slot_shape(n, shape), v, np.float32)
                     for n, v in opt.slot_specs(shape)]
            if backend == "cuda":
                w, slots = cuda.to_device(w), [cuda.to_device(s) for s in slots]
            g_rng = np.random.default_rng(9)
            for it in range(3):
                g = g_rng.standard_normal(shape).astype(np.float32)
                q = 3.0 * (np.abs(g) if opt.sparse_moment_power == 1 else g * g)
                if backend == "cuda":
                    g, q = cuda.to_device(g), cuda.to_device(q)
                opt.apply(backend, it, opt.learning_rate_at(it), [w], [g], [slots], moments=[q])
            results.append(w if backend == "cpu" else w.copy_to_host())
        np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6, err_msg=name)
        print("ok", name)
""")


SIMULATED = simulated_command(_SCRIPT)


@pytest.mark.background(SIMULATED)
def test_moment_cuda_kernels_match_cpu_under_simulator():
    out = simulated_stdout(SIMULATED)
    assert out.count("ok") == 12, out
