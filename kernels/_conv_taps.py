"""Convolutions with few output channels and many input channels (a generator's last layer: 64x64x512 -> 3,
5x5): the forward as per-pixel tap products summed over windows, and the kernel gradient from the
gathered output gradient, so that neither forms the (pixels x KH*KW*C_in) im2col matrix.

    forward:  P = x (pixels x C_in) @ kernel as (C_in x KH*KW*C_out), then
              out[n, i, j, :] = sum over taps (a, b) of P[n, i*SH + a - PT, j*SW + b - PL, a, b, :]
    grad kernel, per stride phase (see `_conv_phase`):
              kernel[r::SH, q::SW] gradient (C_in x taps*C_out) += x's phase pixels^T @ the dZ they read

Why: im2col writes KH*KW*C_in values per output pixel (12800 for that layer) and its GEMM has C_out (3)
columns, so both passes were memory-bound copies: 0.9-1.8 s forward and 0.9-1.0 s kernel gradient for 32
samples on one thread, against TensorFlow's 0.25-0.42 s and 0.30-0.47 s. Here the GEMMs reduce over
C_in (forward) or over the pixels (kernel gradient) and the copies are C_out/C_in as large.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels._conv_phase import _gather_lines, phase_extent
from kernels._conv_simd import gemm
from kernels._jit import u64 as _u

# Bytes of gathered dZ (and, strided, of x's pixels) per GEMM of the kernel gradient, whose reduction runs
# over the chunk's pixels. The 5x5 64x64x512 -> 3 layer (32 samples, ms wall, one / two BLAS threads on the
# loaded 2-core machine, two runs): 256 KiB 274, 121 / 610, 98; 1 MiB 128, 110 / 361, 131; 4 MiB 159, 108 /
# 203, 64; 16 MiB 232, 112 / 131, 128. Two-thread OpenBLAS calls on short reductions spin while the other
# core is busy: the first sizing (x's 512 channels counted too, 446 pixels a call) took 0.9-1.1 s in the
# training step.
DK_CHUNK_BYTES = 1 << 22
DK_MIN_DEPTH = 2048  # see use_taps


@njit(nogil=True, cache=True)
def _sum_taps(p, r0, rows_in, w, kh, kw, co, sh, sw, pt, pl, n, i0, i1, ow, bias, out):
    """out[n, i0:i1] = bias + the window sums of the tap products p ((rows_in*W), KH*KW*C_out) of input
    rows r0..r0+rows_in of sample n (rows outside them are padding)."""
    pf = p.reshape(-1)
    taps = _u(kh * kw * co)
    for i in range(i0, i1):
        dst = out[n, i]
        for j in range(ow):
            acc = dst[j]
            for o in range(co):
                acc[o] = bias[o]
            for a in range(kh):
                ih = i * sh + a - pt - r0
                if ih < 0 or ih >= rows_in:
                    continue
                for b in range(kw):
                    iw = j * sw + b - pl
                    if iw < 0 or iw >= w:
                        continue
                    src = _u(ih * w + iw) * taps + _u((a * kw + b) * co)
                    for o in range(co):
                        acc[o] += pf[src + _u(o)]


@njit(nogil=True, cache=True)
def taps_forward(x, wall, bias, kh, kw, sh, sw, pt, pl, lines, p, simd, out):
    """out (N, OH, OW, C_out) = conv(x, kernel) + bias in one nogil call; wall is the kernel as (C_in,
    KH*KW*C_out); chunks of `lines` output rows per sample; p scratch of the chunk's tap products."""
    n_, h, w, c = x.shape
    _, oh, ow, co = out.shape
    taps = kh * kw * co
    for n in range(n_):
        for i0 in range(0, oh, lines):
            i1 = min(i0 + lines, oh)
            r0 = max(0, i0 * sh - pt)
            r1 = min(h, (i1 - 1) * sh - pt + kh)
            if r1 <= r0:  # every window of these rows lies in the padding
                r0 = r1 = 0
            m = (r1 - r0) * w
            chunk = p[:m * taps].reshape(m, taps)
            if m > 0:
                gemm(simd, False, m, taps, c, x[n, r0:r1].reshape(m, c), c, wall, taps, False, chunk, taps)
            _sum_taps(chunk, r0, r1 - r0, w, kh, kw, co, sh, sw, pt, pl, n, i0, i1, ow, bias, out)


@njit(nogil=True, cache=True)
def _gather_pixels(xf, h, w, c, nh, ih0, nw, iw0, sh, sw, l0, l1, dst):
    """dst ((l1-l0)*nw, c), flat: x's pixels of one phase, lines l0..l1 (the inverse of `_store_lines`)."""
    cu = _u(c)
    for line in range(l0, l1):
        n = line // nh
        ih = ih0 + (line - n * nh) * sh
        rbase = _u((line - l0) * nw) * cu
        for jv in range(nw):
            src = _u(((n * h + ih) * w + iw0 + jv * sw) * c)
            d = rbase + _u(jv) * cu
            for k in range(cu):
                dst[d + k] = xf[src + k]


@njit(nogil=True, cache=True)
def phase_dk(x, dy, kh, kw, sh, sw, pt, pl, rows, cols, xs, simd, dk):
    """dk (flat, phase by phase: (C_in, taps_h, taps_w, C_out) each, offsets as `_conv_phase.phase_kernels`)
    = the kernel gradient for dZ dy (N, OH, OW, C_out), in one nogil call; rows: GEMM reduction rows per
    chunk; cols, xs flat scratch of rows*ceil(KH/SH)*ceil(KW/SW)*C_out and rows*C_in values."""
    n_, h, w, c = x.shape
    _, oh, ow, co = dy.shape
    xf = x.reshape(-1)
    dyf = dy.reshape(-1)
    at = 0
    for r in range(sh):
        ta, ih0, nh = phase_extent(kh, sh, pt, h, r)
        for q in range(sw):
            tb, iw0, nw = phase_extent(kw, sw, pl, w, q)
            depth = ta * tb * co
            out = dk[at:at + c * depth]
            at += c * depth
            out[:] = 0.0
            if nh == 0 or nw == 0 or depth == 0:
                continue
            step = max(1, rows // nw)
            for l0 in range(0, n_ * nh, step):
                l1 = min(l0 + step, n_ * nh)
                m = (l1 - l0) * nw
                _gather_lines(dyf, oh, ow, co, nh, ih0, nw, iw0, sh, sw, pt, pl, ta, tb, l0, l1, cols)
                if sh == 1 and sw == 1:  # every pixel is in the one phase: x's rows as they are
                    a = xf[l0 * nw * c:l1 * nw * c]
                else:
                    _gather_pixels(xf, h, w, c, nh, ih0, nw, iw0, sh, sw, l0, l1, xs)
                    a = xs[:m * c]
                gemm(simd, True, c, depth, m, a.reshape(m, c), c, cols[:m * depth].reshape(m, depth), depth, True,
                     out.reshape(c, depth), depth)


def use_taps(g, pass_: str) -> bool:
    """Whether the "forward" or the "kernel_grad" of a convolution (its `conv2d.ConvGeometry` g) goes
    through this module: fewer than 16 output channels (from 16 the vector GEMM takes im2col's columns),
    at least 4 input channels per output channel (times SH*SW), and

    - forward: stride 1 (strided, the tap products of every input pixel are SH*SW times the work);
    - kernel_grad: an im2col depth KH*KW*C_in of at least DK_MIN_DEPTH.

    Measured one thread, 32 samples, ms (taps vs im2col), forward / kernel gradient: 64x64x32 -> 1 3x3
    4.6 vs 5.2 / 6.0 vs 5.1; 32x32x64 -> 10 1x1 0.88 vs 1.4 / 1.46 vs 1.29; 28x28x64 -> 3 3x3 1.98 vs 2.15
    / 2.3 vs 2.15; 32x32x128 -> 8 3x3 stride 2 4.3 vs 3.5 / 3.7 vs 3.1; 16x16x256 -> 4 5x5 3.2 vs 22.7 /
    3.7 vs 10.0; 32x32x48 -> 3 7x7 7.4 vs 39.2 / 8.7 vs 17.6; 64x64x512 -> 3 5x5 116 vs 878 / 111 vs 1041.
    """
    if g.co >= 16 or 4 * g.co * g.sh * g.sw > g.c:
        return False
    if pass_ == "forward":
        return g.sh == 1 and g.sw == 1
    return g.kh * g.kw * g.c >= DK_MIN_DEPTH


def forward(g, x, kernel, bias, simd, workspace, out) -> None:
    """out = conv(x, kernel) + bias by tap products (g: the call's `conv2d.ConvGeometry`)."""
    dt = x.dtype
    taps = g.kh * g.kw * g.co
    wall = np.ascontiguousarray(kernel.transpose(2, 0, 1, 3)).reshape(g.c, taps)
    # output rows per chunk: tap products of about 1 MiB (at least one output row's input rows)
    lines = max(1, min(g.oh, (1 << 20) // max(1, g.sh * g.w * taps * dt.itemsize)))
    rows_in = min(g.h, (lines - 1) * g.sh + g.kh)
    taps_forward(x, wall, bias, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, lines,
                 workspace("taps_p", (rows_in * g.w * taps,), dt), simd, out)


def kernel_grad(g, x, dy, simd, workspace) -> np.ndarray:
    """The kernel gradient (KH, KW, C_in, C_out) for dZ dy (N, OH, OW, C_out), a fresh array."""
    dt = x.dtype
    depth = -(-g.kh // g.sh) * -(-g.kw // g.sw) * g.co
    nw = -(-g.w // g.sw)
    strided = g.sh > 1 or g.sw > 1  # then x's pixels of a phase are gathered too
    rows = max(nw, DK_CHUNK_BYTES // ((depth + (g.c if strided else 0)) * dt.itemsize))
    flat = np.empty(g.kh * g.kw * g.c * g.co, dt)
    phase_dk(x, dy, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, rows, workspace("taps_cols", (rows * depth,), dt),
             workspace("taps_x", (rows * g.c,), dt), simd, flat)
    grad = np.empty((g.kh, g.kw, g.c, g.co), dt)
    at = 0
    for r in range(g.sh):
        for q in range(g.sw):
            ta, tb = len(range(r, g.kh, g.sh)), len(range(q, g.kw, g.sw))
            size = g.c * ta * tb * g.co
            grad[r::g.sh, q::g.sw] = flat[at:at + size].reshape(g.c, ta, tb, g.co).transpose(1, 2, 0, 3)
            at += size
    return grad
