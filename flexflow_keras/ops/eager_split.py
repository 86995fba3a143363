"""Eager convolutions on both cores: a large convolution called on arrays (a custom train_step that runs
eagerly, a GAN's generator and discriminator, a GradientTape) runs its forward and its backward as two
halves of the batch at once, one on the calling thread and one on a helper thread.

A training step in the runtime splits the batch across processors (data parallelism); an eager call has
no runtime step, and the conv kernels' vector GEMM runs on one thread (kernels/_conv_simd.py), so without
this a two-core machine ran keras.io's DCGAN with one core idle. The kernels release the GIL for a whole
forward or backward (one nogil Numba call each) and keep their scratch buffers per thread, so the halves
run in parallel, with NumPy's BLAS held to one thread meanwhile. Each half writes its own rows of the outputs and input gradients; the weight gradients
of the second half go to buffers of their own, added to the first's afterwards (the sum order of a
two-way data-parallel step). Only where the work pays for the handoff (`MIN_MACS`), the batch holds two
samples, the call comes from the main thread (a script's own code, not a loader's or the runtime's
worker) and another core is free (runtime/cpuload.py, re-read at most every half second) does the split
apply; deterministic ops only (no random stream to share out). The conv kernels' vector GEMM is
single-threaded whatever a fit set BLAS's threads to, so the split applies after a fit too.

Large element-wise activations (the LeakyReLU after each of a DCGAN generator's convolutions, 32x64x64x512
values) split the same way (`ELEMENTWISE_TYPES`, from `MIN_ELEMENTS`): their kernels are nogil Numba loops
or NumPy ufuncs, each half is its own rows, and the results are the same values.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from runtime.cpuload import CpuLoad

SPLIT_TYPES = frozenset({"conv2d", "conv2d_transpose", "conv1d"})
MIN_MACS = 30e6  # multiply-adds of one forward: below this (~0.5 ms on one core) the handoff does not pay
ELEMENTWISE_TYPES = frozenset({"activation"})
MIN_ELEMENTS = 1 << 21  # values of an element-wise op's input (8 MiB of float32, ~1-2 ms a pass on one core)

_state: dict = {}
_lock = threading.Lock()


def _one_blas_thread():
    """A context in which NumPy's BLAS runs one thread (both halves call it: two threads each would
    fight over the two cores), or a no-op without threadpoolctl."""
    ctl = _state.get("blas")
    if ctl is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # optional: the halves then share BLAS's threads
            return contextlib.nullcontext()
        ctl = _state["blas"] = ThreadpoolController()
    return ctl.limit(limits=1, user_api="blas")


def _blas_limit(op):
    """BLAS held to one thread for the halves of a convolution; nothing to hold for an element-wise op."""
    return contextlib.nullcontext() if op.type_name in ELEMENTWISE_TYPES else _one_blas_thread()


def _pool() -> ThreadPoolExecutor | None:
    with _lock:
        if _state.get("pid") != os.getpid():  # first call, or a forked child (the parent's thread is not here)
            _state.clear()
            _state["pid"] = os.getpid()
            try:
                cores = len(os.sched_getaffinity(0))
            except AttributeError:  # not Linux
                cores = os.cpu_count() or 1
            _state["load"] = CpuLoad(cores) if cores >= 2 else None
            _state["pool"] = ThreadPoolExecutor(1, thread_name_prefix="ff-eager-half") if cores >= 2 else None
        load = _state["load"]
        if load is None or load.free_cores() < 2:
            return None
        return _state["pool"]


def _macs(op, arrays, wvals, outs) -> float:
    """Multiply-adds of the forward: each output element (a transposed convolution: each input element,
    its kernel's input channels last) times the kernel's taps and the channels it sums over."""
    kernel = wvals[0]
    big = arrays[0].size if "transpose" in op.type_name else outs[0].size
    return float(big) * kernel.size / max(1, kernel.shape[-1])


def _large(op, arrays, wvals, outs) -> bool:
    """Whether `op` is a kind that splits and this call is worth it: a convolution of MIN_MACS, an
    element-wise op without weights of MIN_ELEMENTS values."""
    if op.type_name in SPLIT_TYPES:
        return bool(wvals) and _macs(op, arrays, wvals, outs) >= MIN_MACS
    if op.type_name in ELEMENTWISE_TYPES:
        return not wvals and arrays[0].shape == outs[0].shape and arrays[0].size >= MIN_ELEMENTS
    return False


def _pool_for(op, ctx, arrays, wvals, outs, stats, grads=()) -> ThreadPoolExecutor | None:
    """The helper thread's pool when this eager call of `op` splits its batch in two, else None."""
    if (stats or ctx.backend != "cpu" or len(arrays) != 1 or arrays[0].ndim < 2 or arrays[0].shape[0] < 2
            or len(outs) != 1 or threading.current_thread() is not threading.main_thread()
            or not _large(op, arrays, wvals, outs)):
        return None
    if not all(a.flags.c_contiguous for a in (arrays[0], outs[0], *grads)):
        return None
    return _pool()


def _rows(n: int) -> tuple[slice, slice]:
    h = n // 2
    return slice(0, h), slice(h, n)


def forward(op, ctx, arrays, wvals, outs, saved, stats) -> None:
    """`op.forward` of an eager call (ops/base.apply_op): as two halves of the batch where it splits."""
    pool = _pool_for(op, ctx, arrays, wvals, outs, stats)
    if pool is None:
        op.forward(ctx, arrays, wvals, outs, saved, stats)
    else:
        _split_forward(op, ctx, arrays, wvals, outs, saved, stats, pool)


def backward(op, ctx, arrays, wvals, outs, saved, stats, gouts, gin, gw) -> None:
    """`op.backward` of a recorded eager call (ops/tape.py): as two halves of the batch where it splits."""
    pool = _pool_for(op, ctx, arrays, wvals, outs, stats, gouts)
    if pool is None:
        op.backward(ctx, arrays, wvals, outs, saved, stats, gouts, gin, gw)
    else:
        _split_backward(op, ctx, arrays, wvals, outs, saved, stats, gouts, gin, gw, pool)


def _split_forward(op, ctx, arrays, wvals, outs, saved, stats, pool) -> None:
    """`op.forward` as two halves of the batch, the second on `pool`'s thread."""
    halves = _rows(arrays[0].shape[0])

    def run(s):
        op.forward(ctx, [arrays[0][s]], wvals, [outs[0][s]], [t[s] for t in saved], stats)

    with _blas_limit(op):
        later = pool.submit(run, halves[1])
        run(halves[0])
        later.result()


def _split_backward(op, ctx, arrays, wvals, outs, saved, stats, gouts, gin, gw, pool) -> None:
    """`op.backward` as two halves of the batch; the second half's weight gradients go to buffers of its
    own, added into `gw` once both are done."""
    halves = _rows(arrays[0].shape[0])
    second = [None if g is None else np.empty_like(g) for g in gw]

    def run(s, gws):
        op.backward(ctx, [arrays[0][s]], wvals, [outs[0][s]], [t[s] for t in saved], stats, [gouts[0][s]],
                    [None if g is None else g[s] for g in gin], gws)

    with _blas_limit(op):
        later = pool.submit(run, halves[1], second)
        run(halves[0], gw)
        later.result()
    for g, extra in zip(gw, second, strict=True):
        if g is not None:
            g += extra
