"""Winograd F(2x2, 3x3) for stride-1 3x3 convolutions on the CPU: forward, grad input and grad kernel.

A 3x3 correlation over 2x2 output tiles costs 16 multiplies per (tile, C_in, C_out) instead of 36: each
of the 16 transformed positions xi is one GEMM over the tiles of a chunk of samples,

    forward      M[xi] (T x Co) = V[xi] (T x Ci) @ U[xi] (Ci x Co),   V = B^T d B,  U = G g G^T,  y = A^T M A
    grad input   the same map on dZ with the kernel flipped and transposed (a full correlation)
    grad kernel  dU[xi] (Ci x Co) += V[xi]^T @ Z[xi],  Z = A dz A^T,  dW = G^T dU G

with B^T = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]], G = [[1,0,0],[.5,.5,.5],[.5,-.5,.5],[0,0,1]],
A^T = [[1,1,1,0],[0,1,-1,-1]]. The GEMMs go to `_conv_simd` (AVX-512 hosts) or BLAS; the transforms are Numba loops
staged so that every inner loop runs over contiguous channels with two loads and one store (a loop that
reads sixteen arrays at once needs more runtime alias checks than LLVM allows and stays scalar).
Tiles past the image (padding, odd sizes) read zeros; outputs past the end are dropped.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels._conv_cpu import grad_rows
from kernels._conv_simd import gemm

_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
_GG = np.kron(_G, _G)  # (16, 9): vec(G g G^T) = (G kron G) vec(g), one small GEMM for all channel pairs


def filter_transform(kernel: np.ndarray, flip: bool = False) -> np.ndarray:
    """U (16, Ci, Co) = G g G^T for a (3, 3, Ci, Co) kernel; with flip, the (16, Co, Ci) transform of the
    kernel rotated by 180 degrees with its channel axes swapped (the grad-input correlation)."""
    g = np.asarray(kernel, np.float64)
    if flip:
        g = g[::-1, ::-1].transpose(0, 1, 3, 2)
    ci, co = g.shape[2], g.shape[3]
    u = _GG @ g.reshape(9, ci * co)
    return u.reshape(16, ci, co).astype(kernel.dtype)


def kernel_from_transform(du: np.ndarray) -> np.ndarray:
    """dW (3, 3, Ci, Co) = G^T dU G for dU (16, Ci, Co), in float64."""
    ci, co = du.shape[1], du.shape[2]
    return (_GG.T @ du.reshape(16, ci * co).astype(np.float64)).reshape(3, 3, ci, co)


@njit(nogil=True, cache=True)
def input_transform(x, l0, l1, pt, pl, th, tw, zero, eo, v):
    """V (16, (l1-l0)*tw, C) = B^T d B of the 4x4 input tiles of tile rows l0..l1 of x (N, H, W, C).

    Tile row l is row ti = l % th of sample n = l // th; its tile tj reads image rows 2ti-pt.. and
    columns 2tj-pl.. (zeros outside the image). zero is a (W, C) array of zeros standing in for rows
    above/below the image. eo (4, 2, tw+1, C) holds the row-transformed strip split into even and odd
    columns, so that the column transform is four flat loops over tw*C contiguous values per row.
    Interior tile rows index x directly: array views made inside the column loop cost a reference-count
    update each and made this transform 30% slower.
    """
    _, h, w, c = x.shape
    twc = tw * c
    for line in range(l0, l1):
        n = line // th
        ti = line - n * th
        t0 = (line - l0) * tw
        r0 = 2 * ti - pt
        inside = r0 >= 0 and r0 + 4 <= h
        d0 = x[n, r0] if r0 >= 0 and r0 < h else zero
        d1 = x[n, r0 + 1] if r0 + 1 >= 0 and r0 + 1 < h else zero
        d2 = x[n, r0 + 2] if r0 + 2 >= 0 and r0 + 2 < h else zero
        d3 = x[n, r0 + 3] if r0 + 3 >= 0 and r0 + 3 < h else zero
        for col in range(2 * tw + 2):  # B^T along the rows, column by column of the strip
            par = col % 2
            j = col // 2
            s = col - pl
            if s < 0 or s >= w:
                for k in range(c):
                    eo[0, par, j, k] = 0.0
                    eo[1, par, j, k] = 0.0
                    eo[2, par, j, k] = 0.0
                    eo[3, par, j, k] = 0.0
            elif inside:
                for k in range(c):
                    eo[0, par, j, k] = x[n, r0, s, k] - x[n, r0 + 2, s, k]
                for k in range(c):
                    eo[1, par, j, k] = x[n, r0 + 1, s, k] + x[n, r0 + 2, s, k]
                for k in range(c):
                    eo[2, par, j, k] = x[n, r0 + 2, s, k] - x[n, r0 + 1, s, k]
                for k in range(c):
                    eo[3, par, j, k] = x[n, r0 + 1, s, k] - x[n, r0 + 3, s, k]
            else:
                for k in range(c):
                    eo[0, par, j, k] = d0[s, k] - d2[s, k]
                    eo[1, par, j, k] = d1[s, k] + d2[s, k]
                    eo[2, par, j, k] = d2[s, k] - d1[s, k]
                    eo[3, par, j, k] = d1[s, k] - d3[s, k]
        for a in range(4):  # B along the columns: tile tj uses columns 2tj..2tj+3 = E[tj] O[tj] E[tj+1] O[tj+1]
            ev = eo[a, 0].reshape((tw + 1) * c)
            od = eo[a, 1].reshape((tw + 1) * c)
            ev1 = ev[c:]
            od1 = od[c:]
            v0 = v[4 * a, t0:t0 + tw].reshape(twc)
            v1 = v[4 * a + 1, t0:t0 + tw].reshape(twc)
            v2 = v[4 * a + 2, t0:t0 + tw].reshape(twc)
            v3 = v[4 * a + 3, t0:t0 + tw].reshape(twc)
            for e in range(twc):
                v0[e] = ev[e] - ev1[e]
            for e in range(twc):
                v1[e] = od[e] + ev1[e]
            for e in range(twc):
                v2[e] = ev1[e] - od[e]
            for e in range(twc):
                v3[e] = od[e] - od1[e]


@njit(nogil=True, cache=True)
def output_transform(m, l0, l1, th, tw, bias, has_bias, relu, accumulate, s, out):
    """out (N, OH, OW, C) (+)= A^T M A (+ bias, then ReLU if relu) for the tile rows l0..l1 in M (16, T, C).

    s is (2, 4, tw, C) scratch. accumulate adds into out (grad input); else out is overwritten.
    """
    _, oh, ow, c = out.shape
    for line in range(l0, l1):
        n = line // th
        ti = line - n * th
        t0 = (line - l0) * tw
        for b in range(4):  # A^T along the rows: flat loops over the strip's tw*C values
            m0 = m[b, t0:t0 + tw].reshape(tw * c)
            m1 = m[4 + b, t0:t0 + tw].reshape(tw * c)
            m2 = m[8 + b, t0:t0 + tw].reshape(tw * c)
            m3 = m[12 + b, t0:t0 + tw].reshape(tw * c)
            s0 = s[0, b].reshape(tw * c)
            s1 = s[1, b].reshape(tw * c)
            for e in range(tw * c):
                s0[e] = m0[e] + m1[e] + m2[e]
            for e in range(tw * c):
                s1[e] = m1[e] - m2[e] - m3[e]
        for r in range(2):  # A along the columns, straight into the output rows
            i = 2 * ti + r
            if i >= oh:
                continue
            a0, a1, a2, a3 = s[r, 0], s[r, 1], s[r, 2], s[r, 3]
            orow = out[n, i]
            for tj in range(tw):
                j = 2 * tj
                y = orow[j]
                if accumulate:
                    for k in range(c):
                        y[k] += a0[tj, k] + a1[tj, k] + a2[tj, k]
                else:
                    for k in range(c):
                        vv = a0[tj, k] + a1[tj, k] + a2[tj, k]
                        if has_bias:
                            vv += bias[k]
                        if relu:
                            vv = np.float32(0.0) if vv < 0.0 else vv
                        y[k] = vv
                if j + 1 >= ow:
                    continue
                y = orow[j + 1]
                if accumulate:
                    for k in range(c):
                        y[k] += a1[tj, k] - a2[tj, k] - a3[tj, k]
                else:
                    for k in range(c):
                        vv = a1[tj, k] - a2[tj, k] - a3[tj, k]
                        if has_bias:
                            vv += bias[k]
                        if relu:
                            vv = np.float32(0.0) if vv < 0.0 else vv
                        y[k] = vv


@njit(nogil=True, cache=True)
def grad_transform(dz, l0, l1, th, tw, eo, z):
    """Z (16, (l1-l0)*tw, C) = A dz A^T of the 2x2 tiles of tile rows l0..l1 of dz (N, OH, OW, C) (zeros
    past the edge).

    eo (4, 2, tw, C) holds the row-transformed strip split into even and odd columns (as in
    `input_transform`), so the column transform is flat loops over tw*C values.
    """
    _, oh, ow, c = dz.shape
    twc = tw * c
    for line in range(l0, l1):
        n = line // th
        ti = line - n * th
        t0 = (line - l0) * tw
        i0 = 2 * ti
        has1 = i0 + 1 < oh
        for col in range(2 * tw):  # A along the rows: [r0, r0 + r1, r0 - r1, -r1], indexed directly
            par = col % 2
            j = col // 2
            if col >= ow:
                for k in range(c):
                    eo[0, par, j, k] = 0.0
                    eo[1, par, j, k] = 0.0
                    eo[2, par, j, k] = 0.0
                    eo[3, par, j, k] = 0.0
            elif has1:
                for k in range(c):
                    eo[0, par, j, k] = dz[n, i0, col, k]
                for k in range(c):
                    eo[1, par, j, k] = dz[n, i0, col, k] + dz[n, i0 + 1, col, k]
                for k in range(c):
                    eo[2, par, j, k] = dz[n, i0, col, k] - dz[n, i0 + 1, col, k]
                for k in range(c):
                    eo[3, par, j, k] = -dz[n, i0 + 1, col, k]
            else:
                for k in range(c):
                    eo[0, par, j, k] = dz[n, i0, col, k]
                    eo[1, par, j, k] = dz[n, i0, col, k]
                    eo[2, par, j, k] = dz[n, i0, col, k]
                    eo[3, par, j, k] = 0.0
        for a in range(4):  # A^T along the columns: tile tj uses columns E[tj], O[tj]
            ev = eo[a, 0].reshape(twc)
            od = eo[a, 1].reshape(twc)
            z0 = z[4 * a, t0:t0 + tw].reshape(twc)
            z1 = z[4 * a + 1, t0:t0 + tw].reshape(twc)
            z2 = z[4 * a + 2, t0:t0 + tw].reshape(twc)
            z3 = z[4 * a + 3, t0:t0 + tw].reshape(twc)
            for e in range(twc):
                z0[e] = ev[e]
            for e in range(twc):
                z1[e] = ev[e] + od[e]
            for e in range(twc):
                z2[e] = ev[e] - od[e]
            for e in range(twc):
                z3[e] = -od[e]


@njit(nogil=True, cache=True)
def forward(x, u, bias, has_bias, relu, pt, pl, th, tw, step, zero, eo, s, vbuf, mbuf, simd, out):
    """The Winograd forward in one nogil call, `step` tile rows at a time: out = act(conv(x) + bias) with
    U = `filter_transform(kernel)`; vbuf and mbuf are flat scratch of 16*step*tw*(C or Co) values; simd
    selects the `_conv_simd` GEMM micro-kernels (else NumPy's BLAS)."""
    c = x.shape[3]
    co = out.shape[3]
    lines = x.shape[0] * th
    for l0 in range(0, lines, step):
        l1 = min(l0 + step, lines)
        t = (l1 - l0) * tw
        v = vbuf[:16 * t * c].reshape((16, t, c))
        m = mbuf[:16 * t * co].reshape((16, t, co))
        input_transform(x, l0, l1, pt, pl, th, tw, zero, eo, v)
        for xi in range(16):
            gemm(simd, False, t, co, c, v[xi], c, u[xi], co, False, m[xi], co)
        output_transform(m, l0, l1, th, tw, bias, has_bias, relu, False, s, out)


@njit(nogil=True, cache=True)
def backward(x, dy2, y2, relu, u_flip, pt, pl, oh, ow, samples, step_k, step_x, zero, eo, zeo, dzero, deo, ds,
             vbuf, mbuf, dz_buf, want_db, db, want_dk, du, want_dx, accumulate_x, simd, dx):
    """The Winograd backward in one nogil call. Per chunk of `samples` samples: dZ (dy2 masked by the
    ReLU output y2 if relu) once, db += colsum(dZ); then, `step_k` / `step_x` tile rows at a time,
    du += V^T Z (the transformed grad kernel; `kernel_from_transform` finishes it) and dx (+)= the
    Winograd correlation of dZ with the flipped kernel (u_flip = `filter_transform(kernel, flip=True)`)."""
    n_, h, w, c = x.shape
    co = dy2.shape[1]
    th, tw = (oh + 1) // 2, (ow + 1) // 2  # output tiles (grad kernel)
    ih, iw = (h + 1) // 2, (w + 1) // 2  # input tiles (grad input)
    per = oh * ow
    for n0 in range(0, n_, samples):
        n1 = min(n0 + samples, n_)
        r0 = n0 * per
        r1 = n1 * per
        dz = grad_rows(dy2, y2, relu, r0, r1, dz_buf, db, want_db)
        dz4 = dz.reshape((n1 - n0, oh, ow, co))
        if want_dk:
            xs = x[n0:n1]
            lines = (n1 - n0) * th
            for l0 in range(0, lines, step_k):
                l1 = min(l0 + step_k, lines)
                t = (l1 - l0) * tw
                v = vbuf[:16 * t * c].reshape((16, t, c))
                z = mbuf[:16 * t * co].reshape((16, t, co))
                input_transform(xs, l0, l1, pt, pl, th, tw, zero, eo, v)
                grad_transform(dz4, l0, l1, th, tw, zeo, z)
                for xi in range(16):
                    gemm(simd, True, c, co, t, v[xi], c, z[xi], co, True, du[xi], co)
        if want_dx:
            gxs = dx[n0:n1]
            lines = (n1 - n0) * ih
            for l0 in range(0, lines, step_x):
                l1 = min(l0 + step_x, lines)
                t = (l1 - l0) * iw
                v = vbuf[:16 * t * co].reshape((16, t, co))
                m = mbuf[:16 * t * c].reshape((16, t, c))
                input_transform(dz4, l0, l1, 2 - pt, 2 - pl, ih, iw, dzero, deo, v)
                for xi in range(16):
                    gemm(simd, False, t, c, co, v[xi], co, u_flip[xi], c, False, m[xi], c)
                output_transform(m, l0, l1, ih, iw, u_flip[0, 0], False, False, accumulate_x, ds, gxs)
