"""Dense (linear) and matmul kernels: ``y = act(x @ W + b)`` and its backward.

The forward GEMM and the weight gradient's go through the vector micro-kernels of `_conv_simd` where
they apply (float32, contiguous, output features a multiple of 16, a host with AVX-512 that Numba
compiles for: about twice OpenBLAS's Haswell kernels on one core, the environment's OPENBLAS_CORETYPE,
and on a par with its SkylakeX ones) and a kernel runs on one thread (`_conv_simd.one_thread`: the
micro-kernels are single-threaded, and with two cores the threaded BLAS is nearly twice as fast),
else through NumPy's BLAS with ``out=`` (no result allocation). The input gradient ``dz @ W^T`` runs
as its transpose ``W @ dz^T`` on the micro-kernels when the rows are a multiple of 16 (`_dz_wt`); bias and activation run fused in one Numba pass over the GEMM result (`kernels.activation_loops`). `x` may have any rank: the layer acts
on the last axis, so x is viewed as (rows, in). When the activation's derivative needs the
pre-activation (gelu, swish, ...; see `activations.grad_from_output`) the caller passes a `z` buffer of
y's shape that forward fills and backward reads; otherwise backward reads only `y`.

A Dense split along its input features computes partial products: ``accumulate=True`` adds
``x @ w (+ b)`` into y (through the GEMM itself, beta = 1, where NumPy's BLAS is reachable), allowed only
for the linear activation and no z; the caller passes the bias to one piece only.
"""

from __future__ import annotations

import threading

import numpy as np
from numba import njit

from kernels import _conv_blas, _conv_simd, activation_loops
from kernels._jit import cpu_jit, flat_out, rows_in, store
from kernels.activations import (
    _NUMPY_FORWARD,
    _TABLE,
    LINEAR,
    Activation,
    numpy_forward_inplace,
)


def _simd_ok(a, b, out) -> bool:
    return (_conv_simd.ENABLED and _conv_simd.one_thread() and out.dtype == np.float32 and a.dtype == np.float32 and b.dtype == np.float32
            and out.shape[1] % _conv_simd.LANES == 0 and out.shape[1] > 0 and out.shape[0] > 0
            and b.flags.c_contiguous and out.flags.c_contiguous)


def _matmul(x2, w, out) -> None:
    """out = x2 @ w (x2: rows x in, w: in x out)."""
    if x2.flags.c_contiguous and _simd_ok(x2, w, out):
        m, k = x2.shape
        _conv_simd.simd_gemm(False, m, out.shape[1], k, x2, k, w, out.shape[1], False, out, out.shape[1])
    else:
        np.matmul(x2, w, out=out)


def _matmul_tn(x2, dz, out, accumulate: bool = False) -> bool:
    """out (+)= x2.T @ dz (x2: rows x in, dz: rows x out) with the micro-kernels; False (nothing done)
    where they do not apply."""
    if x2.flags.c_contiguous and _simd_ok(x2, dz, out):
        rows, k_in = x2.shape
        _conv_simd.simd_gemm(True, k_in, out.shape[1], rows, x2, k_in, dz, out.shape[1], accumulate, out,
                             out.shape[1])
        return True
    if not accumulate:
        np.matmul(x2.T, dz, out=out)
        return True
    return False


# The input gradient goes through the micro-kernels (`_dz_wt`) only for fewer rows than DX_SIMD_ROWS and
# at least DX_SIMD_DEPTH output columns (the GEMM's reduction); elsewhere OpenBLAS's dz @ w.T is as fast
# or faster, the transpose back costing more than the micro-kernels save. One core (thread CPU time, best
# of 7, us, micro-kernels vs OpenBLAS): rows 16 784 -> 512 138 vs 318; 32: 784 -> 128 79 vs 115, 9216 ->
# 128 887 vs 1564, 784 -> 32 35 vs 31; 64: 512 -> 512 402 vs 458, 512 -> 128 102 vs 117, 512 -> 64 63 vs
# 61, 512 -> 10 33 vs 13; 80-96: 512 -> 128 or 512 129 vs 135, 592 vs 605; 128: 512 -> 512 830 vs 792,
# 9216 -> 128 5345 vs 4409, 512 -> 64 130 vs 109, 512 -> 10 62 vs 25 (the MNIST MLP b128's last Dense).
DX_SIMD_ROWS = 128
DX_SIMD_DEPTH = 64


def _dz_wt(dz, w, dx2, accumulate: bool) -> bool:
    """dx2 (+)= dz @ w.T (dz: rows x out, w: in x out) as its transpose dx2.T = w @ dz.T with the
    micro-kernels (w is then read row by row, as they want it), transposed into dx2 in cache-sized
    blocks: 0.55 + 0.1 ms against 1.1 ms for OpenBLAS on MNIST's 9216 -> 128 Dense (32 rows, one core).
    False (nothing done) where the micro-kernels do not apply (rows not a multiple of 16, ...) or do not
    pay (DX_SIMD_ROWS, DX_SIMD_DEPTH)."""
    rows, n_out = dz.shape
    n_in = w.shape[0]
    if not (rows % _conv_simd.LANES == 0 and rows < DX_SIMD_ROWS and n_out >= DX_SIMD_DEPTH
            and w.flags.c_contiguous and dx2.flags.c_contiguous and _simd_ok(w, dz, dx2)):
        return False
    dzt = np.ascontiguousarray(dz.T)
    dxt = _scratch("dxt", (n_in, rows), dz.dtype)
    _conv_simd.simd_gemm(False, n_in, rows, n_out, w, n_out, dzt, rows, False, dxt, rows)
    _transpose_into(dxt, dx2, accumulate)
    return True


@njit(nogil=True, cache=True)
def _transpose_into(src, dst, accumulate):
    """dst (r x n) (+)= src.T for src (n x r), in blocks of 64 rows of src (8 KB at r = 32: in L1)."""
    n, r = src.shape
    for i0 in range(0, n, 64):
        i1 = min(i0 + 64, n)
        for j in range(r):
            if accumulate:
                for i in range(i0, i1):
                    dst[j, i] += src[i, j]
            else:
                for i in range(i0, i1):
                    dst[j, i] = src[i, j]


_tls = threading.local()


def _scratch(name: str, shape, dtype) -> np.ndarray:
    """A per-thread scratch array (shards of one Dense run concurrently on several processors)."""
    cache = _tls.__dict__.setdefault("arrays", {})
    a = cache.get(name)
    if a is None or a.shape != tuple(shape) or a.dtype != dtype:
        a = np.empty(shape, dtype)
        cache[name] = a
    return a


NO_ACTIVATION = Activation(LINEAR)


@cpu_jit
def _column_sums(dy, db):
    rows, cols = dy.shape
    for j in range(cols):
        db[j] = 0.0
    for i in range(rows):
        for j in range(cols):
            db[j] += dy[i, j]


def check_accumulate(act: Activation, z, who: str) -> None:
    """Raise ValueError naming `who` unless a partial-sum forward is well defined (linear, no z)."""
    if act.code != LINEAR or z is not None:
        names = sorted(n for n, (code, _) in _TABLE.items() if code == act.code)
        name = names[0] if names else f"code {act.code}"
        raise ValueError(f"{who}: accumulate=True sums partial products, so it needs the linear activation "
                         f"and z=None; received activation '{name}' ({act}) and z="
                         f"{'None' if z is None else 'a buffer'}. Apply the activation after summing the "
                         f"pieces.")


def linear_forward_cpu(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, y: np.ndarray,
                       act: Activation = NO_ACTIVATION, z: np.ndarray | None = None,
                       accumulate: bool = False) -> None:
    """``y = act(x @ w + b)`` over the last axis of `x`.

    Args:
        x: (..., in) input. w: (in, out) kernel. b: (out,) bias or None.
        y: preallocated (..., out) output.
        act: the fused activation (`kernels.activations.resolve_activation`).
        z: preallocated (..., out) buffer for the pre-activation, when backward needs it; else None.
        accumulate: ``y += x @ w (+ b)`` instead of overwriting y (a piece of a Dense split along its
            input features); linear activation and z=None only.

    Raises:
        ValueError: accumulate=True with a non-linear activation or a z buffer.
    """
    n_in, n_out = w.shape
    x2 = rows_in(x, n_in)
    y2 = flat_out(y, "linear_forward_cpu").reshape(-1, n_out)
    if accumulate:
        check_accumulate(act, z, "linear_forward_cpu")
        if _in_place_ok(x2, w, y2):
            _add_x_w(x2, w, y2)  # y += x @ w in the GEMM itself (beta=1): no temporary
        else:
            y2 += np.matmul(x2, w)
        if b is not None:
            np.add(y2, b, out=y2)
        return
    src = y2 if z is None else flat_out(z, "linear_forward_cpu").reshape(-1, n_out)
    _matmul(x2, w, src)
    has_bias = b is not None
    if act.code in _NUMPY_FORWARD:
        if has_bias:
            np.add(src, b, out=y2)
        elif src is not y2:
            np.copyto(y2, src)
        numpy_forward_inplace(y2, act.code)
    elif has_bias or act.code != LINEAR or src is not y2:
        activation_loops.forward(src, b, y2, z is not None, act)


def linear_backward_cpu(x: np.ndarray, w: np.ndarray, y: np.ndarray, dy: np.ndarray,
                        dx: np.ndarray | None, dw: np.ndarray | None, db: np.ndarray | None,
                        act: Activation = NO_ACTIVATION, z: np.ndarray | None = None,
                        accumulate: tuple[bool, bool, bool] = (False, False, False)) -> None:
    """Gradients of `linear_forward_cpu`: ``dz = dy * act'``; ``dx = dz @ w.T``; ``dw = x.T @ dz``;
    ``db = sum(dz)``.

    Args:
        x, w, y, z: the forward's input, kernel, output and pre-activation buffer (or None).
        dy: gradient of y. dx, dw, db: preallocated gradient buffers, or None where not wanted.
        act: the fused activation.
        accumulate: for (dx, dw, db), whether to add into the buffer instead of overwriting it.
    """
    n_in, n_out = w.shape
    dy2 = rows_in(dy, n_out)
    if act.code == LINEAR:
        dz = dy2
        if db is not None:
            sums = np.empty(n_out, np.float64)
            _column_sums(dy2, sums)
            store(db, sums, accumulate[2])
    else:
        y2 = rows_in(y, n_out)
        pre = y2 if z is None else rows_in(z, n_out)
        dz = np.empty_like(dy2)
        sums = np.empty(n_out, np.float64)
        activation_loops.backward(dy2, pre, y2, dz, sums, False, act)
        if db is not None:
            store(db, sums, accumulate[2])
    if dw is not None:
        x2 = rows_in(x, n_in)
        if _matmul_tn(x2, dz, dw, accumulate[1]):
            pass
        elif _in_place_ok(x2, dz, dw):
            _add_xt_dz(x2, dz, dw)  # dw += x.T @ dz in the GEMM itself (beta=1): no temporary
        else:
            dw += np.matmul(x2.T, dz)
    if dx is not None:
        dx2 = flat_out(dx, "linear_backward_cpu").reshape(-1, n_in)
        if _dz_wt(dz, w, dx2, accumulate[0]):
            pass
        elif not accumulate[0]:
            np.matmul(dz, w.T, out=dx2)
        elif _in_place_ok(dz, w, dx2):
            _add_dz_wt(dz, w, dx2)
        else:
            dx2 += np.matmul(dz, w.T)


def _in_place_ok(*arrays) -> bool:
    """Whether the in-place BLAS path applies: NumPy's own BLAS found, one float dtype, C-contiguous."""
    dt = arrays[0].dtype
    return _conv_blas.AVAILABLE and dt in (np.float32, np.float64) and all(
        a.dtype == dt and a.flags.c_contiguous for a in arrays)


@njit(nogil=True, cache=True)
def _add_x_w(x2, w, y2):
    rows, n_in = x2.shape
    n_out = w.shape[1]
    _conv_blas.gemm(False, False, rows, n_out, n_in, 1.0, x2, n_in, w, n_out, 1.0, y2, n_out)


@njit(nogil=True, cache=True)
def _add_xt_dz(x2, dz, dw):
    rows, n_in = x2.shape
    n_out = dz.shape[1]
    _conv_blas.gemm(True, False, n_in, n_out, rows, 1.0, x2, n_in, dz, n_out, 1.0, dw, n_out)


@njit(nogil=True, cache=True)
def _add_dz_wt(dz, w, dx2):
    rows, n_out = dz.shape
    n_in = w.shape[0]
    _conv_blas.gemm(False, True, rows, n_in, n_out, 1.0, dz, n_out, w, n_out, 1.0, dx2, n_in)


def matmul_forward_cpu(a: np.ndarray, b: np.ndarray, y: np.ndarray) -> None:
    """``y = a @ b`` with NumPy's matmul semantics (batched, broadcast leading dims)."""
    np.matmul(a, b, out=y)


def matmul_backward_cpu(a: np.ndarray, b: np.ndarray, dy: np.ndarray, da: np.ndarray | None,
                        db: np.ndarray | None, accumulate: tuple[bool, bool] = (False, False)) -> None:
    """Gradients of ``y = a @ b`` (NumPy semantics, a and b at least 1-D), summed over broadcast dims."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    dy2 = dy
    if a.ndim == 1:
        dy2 = np.expand_dims(dy2, -2)
    if b.ndim == 1:
        dy2 = np.expand_dims(dy2, -1)
    if da is not None:
        g = np.matmul(dy2, np.swapaxes(b2, -1, -2))
        store(da, _sum_to(g, a2.shape).reshape(a.shape), accumulate[0])
    if db is not None:
        g = np.matmul(np.swapaxes(a2, -1, -2), dy2)
        store(db, _sum_to(g, b2.shape).reshape(b.shape), accumulate[1])


def _sum_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1)
    return g.sum(axis=axes, keepdims=False).reshape(shape) if axes else g


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import linear as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
