"""The CUDA kernels of Adadelta, Adamax, Nadam, Ftrl, Lion, Lamb and Adafactor under the Numba CUDA simulator, through the
optimizer classes on backend "cuda", compared with the CPU kernels on tiny shapes (in a subprocess: the
simulator must be chosen before numba.cuda is first imported)."""

import textwrap

import pytest
from cuda_launch_log import simulated_command, simulated_stdout  # tests/cuda_launch_log.py

_SCRIPT = textwrap.dedent("""
    import numpy as np
    from numba import cuda
    from flexflow_keras import optimizers

    shapes = [(5, 3), (4,), (2, 3, 4)]  # Adafactor factors the last two axes of a rank >= 2 variable
    makers = {
        "adadelta": lambda: optimizers.Adadelta(1.0, clipvalue=0.5),
        "adamax": lambda: optimizers.Adamax(0.01, weight_decay=0.05),
        "nadam": lambda: optimizers.Nadam(0.01, clipnorm=0.5),
        "ftrl": lambda: optimizers.Ftrl(0.1, l1_regularization_strength=0.05, l2_regularization_strength=0.01,
                                        l2_shrinkage_regularization_strength=0.02, beta=0.1),
        "lion": lambda: optimizers.Lion(0.01, weight_decay=0.01),
        "lamb": lambda: optimizers.Lamb(0.01, weight_decay=0.05, clipvalue=0.5),
        "adafactor": lambda: optimizers.Adafactor(0.05, weight_decay=0.02, clip_threshold=0.5),
        "schedule_free": lambda: optimizers.ScheduleFreeAdamW(0.01, warmup_steps=2, weight_decay=0.01),
    }
    for name, make in makers.items():
        results = []
        for backend in ("cpu", "cuda"):
            opt = make()
            w_rng = np.random.default_rng(8)
            w = [w_rng.standard_normal(shape).astype(np.float32) for shape in shapes]
            slots = [[a.copy() if v is None else np.full(opt.slot_shape(n, a.shape), v, np.float32)
                      for n, v in opt.slot_specs(a.shape)] for a in w]
            if backend == "cuda":
                w = [cuda.to_device(a) for a in w]
                slots = [[cuda.to_device(s) for s in ss] for ss in slots]
            g_rng = np.random.default_rng(9)
            for it in range(3):
                gs = [g_rng.standard_normal(a.shape).astype(np.float32) for a in w]
                if backend == "cuda":
                    gs = [cuda.to_device(g) for g in gs]
                opt.apply(backend, it, opt.learning_rate_at(it), w, gs, slots)
            results.append([a if backend == "cpu" else a.copy_to_host() for a in w])
        for c, d in zip(*results):
            np.testing.assert_allclose(d, c, rtol=1e-5, atol=1e-6, err_msg=name)
        print("ok", name)
""")


SIMULATED = simulated_command(_SCRIPT)


@pytest.mark.background(SIMULATED)
def test_more_optimizer_cuda_kernels_match_cpu_under_simulator():
    out = simulated_stdout(SIMULATED)
    assert out.count("ok") == 8, out
