"""The input gradient of a 2-D convolution as a gather over the output gradient, one stride phase at a time
(the sub-pixel form): also the forward of Conv2DTranspose, which is that input gradient.

    dx[n, ih, iw, c] = sum over taps (a, b) with ih = i*SH + a - PT, iw = j*SW + b - PL of
                       dy[n, i, j, :] @ kernel[a, b, c, :]

An input pixel whose row satisfies (ih + PT) % SH == r receives only the taps a = r, r + SH, ... (and
likewise for columns), from the output rows i = (ih + PT) // SH - t. So for each of the SH*SW phases the
input gradient is an ordinary stride-1 convolution: gather the ceil(KH/SH) x ceil(KW/SW) output-gradient
pixels of every input pixel of the phase (depth taps*C_out), one GEMM by that phase's taps of the kernel
((taps*C_out) x C_in), and each input pixel written once.

Why: the im2col path (`_conv_cpu.gemm_backward`) forms dy @ kernel^T, a (pixels x KH*KW*C_in) matrix, and
adds it back with col2im. With many input channels that matrix is huge and its GEMM has the short
reduction C_out and a long, power-of-two row stride; a DCGAN generator's Conv2DTranspose 32x32x256 ->
64x64x512 (4x4, stride 2, 32 samples, one thread) took 3.3 s that way against 0.89 s for TensorFlow.
Here its GEMMs are (pixels x 1024) @ (1024 x 512) and nothing is scattered.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels._conv_simd import gemm
from kernels._jit import u64 as _u


def phase_taps(k: int, s: int, r: int) -> int:
    """Taps a in [0, k) with a % s == r."""
    return max(0, -(-(k - r) // s))


def phase_kernels(kernel: np.ndarray, sh: int, sw: int) -> tuple[np.ndarray, np.ndarray]:
    """(flat weights, offsets): for phase (r, q) (index r*SW + q), kernel[r::SH, q::SW] as a
    (taps_h*taps_w*C_out, C_in) matrix, starting at offsets[r*SW + q] of the flat array."""
    kh, kw, c, co = kernel.shape
    parts, offsets, at = [], np.zeros(sh * sw + 1, np.int64), 0
    for r in range(sh):
        for q in range(sw):
            part = np.ascontiguousarray(kernel[r::sh, q::sw].transpose(0, 1, 3, 2)).reshape(-1)
            parts.append(part)
            at += part.size
            offsets[r * sw + q + 1] = at
    flat = np.concatenate(parts) if at else np.zeros(1, kernel.dtype)
    return flat, offsets


@njit(nogil=True, cache=True)
def _gather_lines(dyf, oh, ow, co, nh, ih0, nw, iw0, sh, sw, pt, pl, ta, tb, l0, l1, cf):
    """cf (rows (l1-l0)*nw, ta*tb*co), flat: the output-gradient pixels each input pixel of one phase reads,
    for lines l0..l1 of the phase (a line is one input row of the phase over N)."""
    cu = _u(co)
    depth = _u(ta * tb * co)
    for line in range(l0, l1):
        n = line // nh
        ih = ih0 + (line - n * nh) * sh
        u = (ih + pt) // sh
        rbase = _u((line - l0) * nw) * depth
        for jv in range(nw):
            v = (iw0 + jv * sw + pl) // sw
            d0 = rbase + _u(jv) * depth
            for t in range(ta):
                i = u - t
                for tt in range(tb):
                    j = v - tt
                    d = d0 + _u(t * tb + tt) * cu
                    if i >= 0 and i < oh and j >= 0 and j < ow:
                        src = _u(((n * oh + i) * ow + j) * co)
                        for k in range(cu):
                            cf[d + k] = dyf[src + k]
                    else:
                        for k in range(cu):
                            cf[d + k] = 0.0


@njit(nogil=True, cache=True)
def _store_lines(res, h, w, c, nh, ih0, nw, iw0, sh, sw, l0, l1, accumulate, dxf):
    """dx's pixels of one phase, lines l0..l1, = (or +=) the rows of res ((l1-l0)*nw, c), flat."""
    cu = _u(c)
    for line in range(l0, l1):
        n = line // nh
        ih = ih0 + (line - n * nh) * sh
        rbase = _u((line - l0) * nw) * cu
        for jv in range(nw):
            iw = iw0 + jv * sw
            d = _u(((n * h + ih) * w + iw) * c)
            s = rbase + _u(jv) * cu
            if accumulate:
                for k in range(cu):
                    dxf[d + k] += res[s + k]
            else:
                for k in range(cu):
                    dxf[d + k] = res[s + k]


@njit(inline="always", cache=True)
def phase_extent(k, s, pad, size, r):
    """Stride phase `r` of one spatial dim (kernel extent k, stride s, leading pad, input size): (the
    kernel taps that reach it, its first input position, how many input positions it holds)."""
    taps = max(0, (k - r + s - 1) // s)
    first = (r - pad) % s
    count = (size - first + s - 1) // s if first < size else 0
    return taps, first, count


@njit(nogil=True, cache=True)
def phase_dx(dy, wflat, woff, kh, kw, sh, sw, pt, pl, rows, cols, res, accumulate, simd, dx):
    """dx (N, H, W, C_in) = (or += when accumulate) the input gradient of a convolution for dy (N, OH, OW,
    C_out), in one nogil call; wflat / woff from `phase_kernels`; rows: GEMM rows per chunk (at least one
    input row of a phase); cols and res flat scratch of rows*ceil(KH/SH)*ceil(KW/SW)*C_out and rows*C_in
    values; simd as `_conv_cpu.gemm_forward`."""
    n_, oh, ow, co = dy.shape
    _, h, w, c = dx.shape
    dyf = dy.reshape(-1)
    dxf = dx.reshape(-1)
    for r in range(sh):
        ta, ih0, nh = phase_extent(kh, sh, pt, h, r)
        for q in range(sw):
            tb, iw0, nw = phase_extent(kw, sw, pl, w, q)
            if nh == 0 or nw == 0:
                continue
            depth = ta * tb * co
            lines = n_ * nh
            step = max(1, rows // nw)
            wp = wflat[woff[r * sw + q]:woff[r * sw + q] + depth * c]
            for l0 in range(0, lines, step):
                l1 = min(l0 + step, lines)
                m = (l1 - l0) * nw
                out = res[:m * c]
                if depth == 0:  # a stride larger than the kernel: no tap reaches this phase
                    out[:] = 0.0
                else:
                    _gather_lines(dyf, oh, ow, co, nh, ih0, nw, iw0, sh, sw, pt, pl, ta, tb, l0, l1, cols)
                    gemm(simd, False, m, c, depth, cols[:m * depth].reshape(m, depth), depth,
                         wp.reshape(depth, c), c, False, out.reshape(m, c), c)
                _store_lines(out, h, w, c, nh, ih0, nw, iw0, sh, sw, l0, l1, accumulate, dxf)
