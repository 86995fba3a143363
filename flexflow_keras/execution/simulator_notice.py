"""The CUDA simulator's notice: when GPU processors are Numba's simulator (NUMBA_ENABLE_CUDASIM=1), say
so once, with what a simulated CUDA thread costs on this machine.

The simulator runs every CUDA thread of every launch as a Python thread, so a kernel costs about that
figure times its thread count: a Dense layer with 400,000 weights launches 400,000 threads for its
weight gradient and as many per optimizer pass. Without the notice a run looks hung. The figure is
measured once (a 256-thread launch of a one-line kernel, a few hundredths of a second) and compared
with about a nanosecond per such thread on a GPU.
"""

from __future__ import annotations

import logging
import math
import time

log = logging.getLogger("flexflow_keras")

GPU_NS_PER_THREAD = 1.0  # a simple elementwise thread on a recent GPU, amortised over a large launch
_SAMPLE_THREADS = 256
_said: list[bool] = [False]
_us: list[float | None] = [None]  # the measured cost per simulated thread, once announced


cuda = None  # numba.cuda, imported on first use; a module global because the simulator swaps this name


def _double(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = a[i] * 2.0


def microseconds_per_thread() -> float:
    """Measured wall time of one simulated CUDA thread (a one-line elementwise kernel), in µs."""
    global cuda
    import numpy as np
    from numba import cuda as numba_cuda

    cuda = numba_cuda
    kernel = cuda.jit(_double)
    arr = cuda.to_device(np.ones(_SAMPLE_THREADS, np.float32))
    kernel[_SAMPLE_THREADS // 32, 32](arr)  # warm up: the first launch sets the simulator up
    t0 = time.perf_counter()
    kernel[_SAMPLE_THREADS // 32, 32](arr)
    return (time.perf_counter() - t0) / _SAMPLE_THREADS * 1e6


def text(us_per_thread: float) -> str:
    """The notice for a measured cost per simulated thread."""
    slower = us_per_thread * 1000.0 / GPU_NS_PER_THREAD
    slower = round(slower, -max(0, len(str(int(slower))) - 2))  # two significant digits: an estimate
    return (f"GPU: CUDA simulator (NUMBA_ENABLE_CUDASIM=1): kernels run in Python, one Python thread per "
            f"CUDA thread ({us_per_thread:.0f} µs each here), about {slower:,.0f}× slower than a GPU; a "
            f"kernel costs that times its threads (a Dense layer with 400,000 weights: minutes per step). "
            f"For quick checks use a small model and -b; progress lines show each step as it completes.")


def announce(machine) -> None:
    """Log the notice once per process when `machine` has GPU processors and the simulator is on."""
    from runtime import gpu
    from runtime.machine import ProcKind

    if _said[0] or not machine.processors(ProcKind.GPU) or not gpu.simulator_requested():
        return
    _said[0] = True
    try:
        us = microseconds_per_thread()
    except Exception as e:  # noqa: BLE001 - the notice must never stop a run; say it without the figure
        log.debug("could not time the CUDA simulator: %s: %s", type(e).__name__, e)
        log.warning("GPU: CUDA simulator (NUMBA_ENABLE_CUDASIM=1): kernels run in Python, one Python thread "
                    "per CUDA thread, many thousand times slower than a GPU.")
        return
    _us[0] = us
    log.warning(text(us))


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def step_estimate(trainable_weights: int) -> str | None:
    """The lower bound on a training step's time on the simulator for a model with that many trainable
    weights (each gets at least one thread in its weight-gradient kernel and one in the optimizer
    update), or None when the simulator was not announced in this process."""
    us = _us[0]
    if us is None or trainable_weights <= 0:
        return None
    threads = 2 * trainable_weights
    return (f"CUDA simulator: {trainable_weights:,} trainable weights, so a training step runs at least "
            f"{threads:,} simulated CUDA threads: at least {_duration(threads * us * 1e-6)} per step here")


def estimate_for(model) -> None:
    """Log `step_estimate` for a Keras model about to train (nothing off the simulator)."""
    if _us[0] is None:
        return
    try:
        n = int(sum(math.prod(int(d) for d in w.shape) for w in model.trainable_weights))
    except (AttributeError, TypeError, ValueError) as e:  # a model that cannot count: no estimate
        log.debug("no simulator step estimate: %s", e)
        return
    line = step_estimate(n)
    if line:
        log.warning(line)
