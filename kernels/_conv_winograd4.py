"""Winograd F(4x4, 3x3) for stride-1 3x3 convolutions on the CPU: forward, grad input and grad kernel.

The same three maps as `_conv_winograd` (F(2x2, 3x3)), on 4x4 output tiles read from 6x6 input tiles:
36 multiplies per (tile, C_in, C_out) for 16 outputs, 2.25 per output against 4 for F(2x2, 3x3) and 9
for a direct correlation, and 2.25 transformed values per output against 4, so the transforms move
about half the bytes too. Each of the 36 transformed positions xi is one GEMM over a chunk of tiles:

    forward      M[xi] (T x Co) = V[xi] (T x Ci) @ U[xi] (Ci x Co),   V = B^T d B,  U = G g G^T,  y = A^T M A
    grad input   the same map on dZ (padded by 2 - pad) with the kernel flipped and transposed
    grad kernel  dU[xi] (Ci x Co) += V[xi]^T @ Z[xi],  Z = A dz A^T,  dW = G^T dU G   (the adjoint)

with the interpolation points 0, 1, -1, 2, -2 (Lavin and Gray, 2016):

    B^T = [[4, 0,-5, 0, 1, 0],     G = [[ 1/4,    0,    0],     A^T = [[1, 1, 1, 1, 1, 0],
           [0,-4,-4, 1, 1, 0],          [-1/6, -1/6, -1/6],            [0, 1,-1, 2,-2, 0],
           [0, 4,-4,-1, 1, 0],          [-1/6,  1/6, -1/6],            [0, 1, 1, 4, 4, 0],
           [0,-2,-1, 2, 1, 0],          [1/24, 1/12,  1/6],            [0, 1,-1, 8,-8, 1]]
           [0, 2,-1,-2, 1, 0],          [1/24,-1/12,  1/6],
           [0, 4, 0,-5, 0, 1]]          [   0,    0,    1]]

In float32 its rounding error is 10-20 times F(2x2, 3x3)'s (the transforms scale values by up to 8 and
cancel): 1e-6 to 6e-6 of the output's largest magnitude on the layers measured, against 1e-7 to 9e-7.
The transforms are staged like `_conv_winograd`'s: rows first, into a strip split into the four column
phases (column 4j + q in phase q, row j), so that the column transform is flat loops over tw*C
contiguous values with a few loads and one store each. Tiles past the image read zeros; outputs past the
end are dropped.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels._conv_cpu import colsum_rows, relu_grad_rows
from kernels._conv_simd import gemm

_G = np.array([[1 / 4, 0.0, 0.0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
               [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0.0, 0.0, 1.0]])
_GG = np.kron(_G, _G)  # (36, 9): vec(G g G^T) = (G kron G) vec(g)
# The matrices of the docstring, for the tests' float64 check of the staged transforms.
B_T = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], dtype=np.float64)
A_T = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
               dtype=np.float64)
G = _G
# float32 constants: a float64 literal would promote float32 arithmetic to float64 inside the loops.
F2, F4, F5, F8 = np.float32(2.0), np.float32(4.0), np.float32(5.0), np.float32(8.0)
F0, F1 = np.float32(0.0), np.float32(1.0)


def filter_transform(kernel: np.ndarray, flip: bool = False) -> np.ndarray:
    """U (36, Ci, Co) = G g G^T for a (3, 3, Ci, Co) kernel; with flip, the (36, Co, Ci) transform of the
    kernel rotated by 180 degrees with its channel axes swapped (the grad-input correlation)."""
    g = np.asarray(kernel, np.float64)
    if flip:
        g = g[::-1, ::-1].transpose(0, 1, 3, 2)
    ci, co = g.shape[2], g.shape[3]
    u = _GG @ g.reshape(9, ci * co)
    return u.reshape(36, ci, co).astype(kernel.dtype)


def kernel_from_transform(du: np.ndarray) -> np.ndarray:
    """dW (3, 3, Ci, Co) = G^T dU G for dU (36, Ci, Co), in float64."""
    ci, co = du.shape[1], du.shape[2]
    return (_GG.T @ du.reshape(36, ci * co).astype(np.float64)).reshape(3, 3, ci, co)


@njit(nogil=True, cache=True)
def _phase_columns(ph, a, twc, c, v, r0, r1):
    """V rows 6a..6a+5 (flat r0:r1 over tiles x channels) = B^T along the columns of strip row a, whose
    phases ph[a, q] hold columns 4j + q: tile tj reads P0 P1 P2 P3 [tj] and P0 P1 [tj + 1]."""
    p0 = ph[a, 0].reshape(-1)
    p1 = ph[a, 1].reshape(-1)
    p2 = ph[a, 2].reshape(-1)
    p3 = ph[a, 3].reshape(-1)
    q0 = p0[c:]
    q1 = p1[c:]
    v0 = v[6 * a].reshape(-1)[r0:r1]
    v1 = v[6 * a + 1].reshape(-1)[r0:r1]
    v2 = v[6 * a + 2].reshape(-1)[r0:r1]
    v3 = v[6 * a + 3].reshape(-1)[r0:r1]
    v4 = v[6 * a + 4].reshape(-1)[r0:r1]
    v5 = v[6 * a + 5].reshape(-1)[r0:r1]
    for e in range(twc):
        v0[e] = F4 * p0[e] - F5 * p2[e] + q0[e]
    for e in range(twc):
        v1[e] = q0[e] + p3[e] - F4 * (p1[e] + p2[e])
    for e in range(twc):
        v2[e] = q0[e] - p3[e] + F4 * (p1[e] - p2[e])
    for e in range(twc):
        v3[e] = q0[e] - p2[e] + F2 * (p3[e] - p1[e])
    for e in range(twc):
        v4[e] = q0[e] - p2[e] + F2 * (p1[e] - p3[e])
    for e in range(twc):
        v5[e] = F4 * p1[e] - F5 * p3[e] + q1[e]


@njit(nogil=True, cache=True)
def input_transform(x, l0, l1, pt, pl, th, tw, zero, ph, v):
    """V (36, (l1-l0)*tw, C) = B^T d B of the 6x6 input tiles of tile rows l0..l1 of x (N, H, W, C).

    Tile row l is row ti = l % th of sample n = l // th; its tile tj reads image rows 4ti-pt.. and
    columns 4tj-pl.. (zeros outside the image). zero is a (W, C) array of zeros standing in for rows
    above/below the image; ph (6, 4, tw+1, C) is the row-transformed strip split into column phases.
    """
    _, h, w, c = x.shape
    twc = tw * c
    for line in range(l0, l1):
        n = line // th
        ti = line - n * th
        t0 = (line - l0) * twc
        r0 = 4 * ti - pt
        d0 = x[n, r0] if r0 >= 0 and r0 < h else zero
        d1 = x[n, r0 + 1] if r0 + 1 >= 0 and r0 + 1 < h else zero
        d2 = x[n, r0 + 2] if r0 + 2 >= 0 and r0 + 2 < h else zero
        d3 = x[n, r0 + 3] if r0 + 3 >= 0 and r0 + 3 < h else zero
        d4 = x[n, r0 + 4] if r0 + 4 >= 0 and r0 + 4 < h else zero
        d5 = x[n, r0 + 5] if r0 + 5 >= 0 and r0 + 5 < h else zero
        inside = r0 >= 0 and r0 + 6 <= h
        for col in range(4 * tw + 2):  # B^T along the rows, column by column of the strip
            q = col % 4
            j = col // 4
            s = col - pl
            if s < 0 or s >= w:
                for a in range(6):
                    for k in range(c):
                        ph[a, q, j, k] = F0
            elif inside:  # x indexed directly: a view per column costs a reference-count update
                for k in range(c):
                    ph[0, q, j, k] = F4 * x[n, r0, s, k] - F5 * x[n, r0 + 2, s, k] + x[n, r0 + 4, s, k]
                for k in range(c):
                    ph[1, q, j, k] = (x[n, r0 + 4, s, k] + x[n, r0 + 3, s, k]
                                      - F4 * (x[n, r0 + 1, s, k] + x[n, r0 + 2, s, k]))
                for k in range(c):
                    ph[2, q, j, k] = (x[n, r0 + 4, s, k] - x[n, r0 + 3, s, k]
                                      + F4 * (x[n, r0 + 1, s, k] - x[n, r0 + 2, s, k]))
                for k in range(c):
                    ph[3, q, j, k] = (x[n, r0 + 4, s, k] - x[n, r0 + 2, s, k]
                                      + F2 * (x[n, r0 + 3, s, k] - x[n, r0 + 1, s, k]))
                for k in range(c):
                    ph[4, q, j, k] = (x[n, r0 + 4, s, k] - x[n, r0 + 2, s, k]
                                      + F2 * (x[n, r0 + 1, s, k] - x[n, r0 + 3, s, k]))
                for k in range(c):
                    ph[5, q, j, k] = F4 * x[n, r0 + 1, s, k] - F5 * x[n, r0 + 3, s, k] + x[n, r0 + 5, s, k]
            else:  # one loop per output row, as above, so that each vectorizes
                for k in range(c):
                    ph[0, q, j, k] = F4 * d0[s, k] - F5 * d2[s, k] + d4[s, k]
                for k in range(c):
                    ph[1, q, j, k] = d4[s, k] + d3[s, k] - F4 * (d1[s, k] + d2[s, k])
                for k in range(c):
                    ph[2, q, j, k] = d4[s, k] - d3[s, k] + F4 * (d1[s, k] - d2[s, k])
                for k in range(c):
                    ph[3, q, j, k] = d4[s, k] - d2[s, k] + F2 * (d3[s, k] - d1[s, k])
                for k in range(c):
                    ph[4, q, j, k] = d4[s, k] - d2[s, k] + F2 * (d1[s, k] - d3[s, k])
                for k in range(c):
                    ph[5, q, j, k] = F4 * d1[s, k] - F5 * d3[s, k] + d5[s, k]
        for a in range(6):
            _phase_columns(ph, a, twc, c, v, t0, t0 + twc)


@njit(nogil=True, cache=True)
def output_transform(m, l0, l1, th, tw, bias, has_bias, relu, accumulate, s, out):
    """out (N, OH, OW, C) (+)= A^T M A (+ bias, then ReLU if relu) for the tile rows l0..l1 in M (36, T, C).

    s is (4, 6, tw, C) scratch. accumulate adds into out (grad input); else out is overwritten.
    """
    _, oh, ow, c = out.shape
    twc = tw * c
    for line in range(l0, l1):
        n = line // th
        ti = line - n * th
        t0 = (line - l0) * twc
        for b in range(6):  # A^T along the rows: flat loops over the strip's tw*C values
            m0 = m[b].reshape(-1)[t0:t0 + twc]
            m1 = m[6 + b].reshape(-1)[t0:t0 + twc]
            m2 = m[12 + b].reshape(-1)[t0:t0 + twc]
            m3 = m[18 + b].reshape(-1)[t0:t0 + twc]
            m4 = m[24 + b].reshape(-1)[t0:t0 + twc]
            m5 = m[30 + b].reshape(-1)[t0:t0 + twc]
            s0 = s[0, b].reshape(-1)
            s1 = s[1, b].reshape(-1)
            s2 = s[2, b].reshape(-1)
            s3 = s[3, b].reshape(-1)
            for e in range(twc):
                s0[e] = m0[e] + m1[e] + m2[e] + m3[e] + m4[e]
            for e in range(twc):
                s1[e] = m1[e] - m2[e] + F2 * (m3[e] - m4[e])
            for e in range(twc):
                s2[e] = m1[e] + m2[e] + F4 * (m3[e] + m4[e])
            for e in range(twc):
                s3[e] = m1[e] - m2[e] + F8 * (m3[e] - m4[e]) + m5[e]
        for r in range(4):  # A along the columns, straight into the output rows (indexed directly)
            i = 4 * ti + r
            if i >= oh:
                break
            for tj in range(tw):
                j = 4 * tj
                if accumulate:
                    for k in range(c):
                        out[n, i, j, k] += (s[r, 0, tj, k] + s[r, 1, tj, k] + s[r, 2, tj, k] + s[r, 3, tj, k]
                                            + s[r, 4, tj, k])
                    if j + 1 < ow:
                        for k in range(c):
                            out[n, i, j + 1, k] += s[r, 1, tj, k] - s[r, 2, tj, k] + F2 * (s[r, 3, tj, k] - s[r, 4, tj, k])
                    if j + 2 < ow:
                        for k in range(c):
                            out[n, i, j + 2, k] += s[r, 1, tj, k] + s[r, 2, tj, k] + F4 * (s[r, 3, tj, k] + s[r, 4, tj, k])
                    if j + 3 < ow:
                        for k in range(c):
                            out[n, i, j + 3, k] += (s[r, 1, tj, k] - s[r, 2, tj, k]
                                                    + F8 * (s[r, 3, tj, k] - s[r, 4, tj, k]) + s[r, 5, tj, k])
                else:
                    for k in range(c):
                        out[n, i, j, k] = (s[r, 0, tj, k] + s[r, 1, tj, k] + s[r, 2, tj, k] + s[r, 3, tj, k]
                                           + s[r, 4, tj, k])
                    if j + 1 < ow:
                        for k in range(c):
                            out[n, i, j + 1, k] = s[r, 1, tj, k] - s[r, 2, tj, k] + F2 * (s[r, 3, tj, k] - s[r, 4, tj, k])
                    if j + 2 < ow:
                        for k in range(c):
                            out[n, i, j + 2, k] = s[r, 1, tj, k] + s[r, 2, tj, k] + F4 * (s[r, 3, tj, k] + s[r, 4, tj, k])
                    if j + 3 < ow:
                        for k in range(c):
                            out[n, i, j + 3, k] = (s[r, 1, tj, k] - s[r, 2, tj, k]
                                                   + F8 * (s[r, 3, tj, k] - s[r, 4, tj, k]) + s[r, 5, tj, k])
            if not accumulate and (has_bias or relu):  # the epilogue over the finished row, in cache
                orow = out[n, i].reshape(-1)
                if has_bias:
                    for j in range(ow):
                        for k in range(c):
                            orow[j * c + k] += bias[k]
                if relu:
                    for e in range(ow * c):
                        orow[e] = F0 if orow[e] < F0 else orow[e]


@njit(nogil=True, cache=True)
def grad_transform(dz, l0, l1, th, tw, ph, z):
    """Z (36, (l1-l0)*tw, C) = A dz A^T of the 4x4 tiles of tile rows l0..l1 of dz (N, OH, OW, C) (zeros
    past the edge); ph (6, 4, tw, C) holds the row-transformed strip split into column phases."""
    _, oh, ow, c = dz.shape
    twc = tw * c
    for line in range(l0, l1):
        n = line // th
        ti = line - n * th
        t0 = (line - l0) * twc
        i0 = 4 * ti
        last = min(oh - i0, 4)  # rows of this tile row inside the image
        for col in range(4 * tw):  # A along the rows, dz indexed directly (no views in this loop)
            q = col % 4
            j = col // 4
            if col >= ow:
                for a in range(6):
                    for k in range(c):
                        ph[a, q, j, k] = F0
            elif last == 4:
                for k in range(c):
                    ph[0, q, j, k] = dz[n, i0, col, k]
                for k in range(c):
                    ph[1, q, j, k] = dz[n, i0, col, k] + dz[n, i0 + 1, col, k] + dz[n, i0 + 2, col, k] + dz[n, i0 + 3, col, k]
                for k in range(c):
                    ph[2, q, j, k] = dz[n, i0, col, k] - dz[n, i0 + 1, col, k] + dz[n, i0 + 2, col, k] - dz[n, i0 + 3, col, k]
                for k in range(c):
                    ph[3, q, j, k] = (dz[n, i0, col, k] + F2 * dz[n, i0 + 1, col, k] + F4 * dz[n, i0 + 2, col, k]
                                      + F8 * dz[n, i0 + 3, col, k])
                for k in range(c):
                    ph[4, q, j, k] = (dz[n, i0, col, k] - F2 * dz[n, i0 + 1, col, k] + F4 * dz[n, i0 + 2, col, k]
                                      - F8 * dz[n, i0 + 3, col, k])
                for k in range(c):
                    ph[5, q, j, k] = dz[n, i0 + 3, col, k]
            else:  # the last tile row, cut by the image: rows past it count as zeros
                f1 = F1 if last > 1 else F0
                f2 = F1 if last > 2 else F0
                i1 = min(i0 + 1, oh - 1)
                i2 = min(i0 + 2, oh - 1)
                for k in range(c):
                    u0 = dz[n, i0, col, k]
                    u1 = f1 * dz[n, i1, col, k]
                    u2 = f2 * dz[n, i2, col, k]
                    ph[0, q, j, k] = u0
                    ph[1, q, j, k] = u0 + u1 + u2
                    ph[2, q, j, k] = u0 - u1 + u2
                    ph[3, q, j, k] = u0 + F2 * u1 + F4 * u2
                    ph[4, q, j, k] = u0 - F2 * u1 + F4 * u2
                    ph[5, q, j, k] = F0
        for a in range(6):  # A^T along the columns: tile tj uses columns P0..P3[tj]
            p0 = ph[a, 0].reshape(-1)
            p1 = ph[a, 1].reshape(-1)
            p2 = ph[a, 2].reshape(-1)
            p3 = ph[a, 3].reshape(-1)
            z0 = z[6 * a].reshape(-1)[t0:t0 + twc]
            z1 = z[6 * a + 1].reshape(-1)[t0:t0 + twc]
            z2 = z[6 * a + 2].reshape(-1)[t0:t0 + twc]
            z3 = z[6 * a + 3].reshape(-1)[t0:t0 + twc]
            z4 = z[6 * a + 4].reshape(-1)[t0:t0 + twc]
            z5 = z[6 * a + 5].reshape(-1)[t0:t0 + twc]
            for e in range(twc):
                z0[e] = p0[e]
            for e in range(twc):
                z1[e] = p0[e] + p1[e] + p2[e] + p3[e]
            for e in range(twc):
                z2[e] = p0[e] - p1[e] + p2[e] - p3[e]
            for e in range(twc):
                z3[e] = p0[e] + F2 * p1[e] + F4 * p2[e] + F8 * p3[e]
            for e in range(twc):
                z4[e] = p0[e] - F2 * p1[e] + F4 * p2[e] - F8 * p3[e]
            for e in range(twc):
                z5[e] = p3[e]


@njit(nogil=True, cache=True)
def forward(x, u, bias, has_bias, relu, pt, pl, th, tw, step, zero, ph, s, vbuf, mbuf, simd, out):
    """The F(4x4, 3x3) forward in one nogil call, `step` tile rows at a time: out = act(conv(x) + bias)
    with U = `filter_transform(kernel)`; vbuf and mbuf are flat scratch of 36*step*tw*(C or Co) values;
    simd selects the `_conv_simd` GEMM micro-kernels (else NumPy's BLAS)."""
    c = x.shape[3]
    co = out.shape[3]
    lines = x.shape[0] * th
    for l0 in range(0, lines, step):
        l1 = min(l0 + step, lines)
        t = (l1 - l0) * tw
        v = vbuf[:36 * t * c].reshape((36, t, c))
        m = mbuf[:36 * t * co].reshape((36, t, co))
        input_transform(x, l0, l1, pt, pl, th, tw, zero, ph, v)
        for xi in range(36):
            gemm(simd, False, t, co, c, v[xi], c, u[xi], co, False, m[xi], co)
        output_transform(m, l0, l1, th, tw, bias, has_bias, relu, False, s, out)


@njit(nogil=True, cache=True)
def backward(x, dy2, y2, relu, u_flip, pt, pl, oh, ow, samples, step_k, step_x, zero, ph, zph, dzero, dph, ds,
             vbuf, mbuf, dz_buf, want_db, db, want_dk, du, want_dx, accumulate_x, simd, dx):
    """The F(4x4, 3x3) backward in one nogil call, laid out as `_conv_winograd.backward`: per chunk of
    `samples` samples dZ once (dy2 masked by the ReLU output y2 if relu) and db += colsum(dZ); then,
    `step_k` / `step_x` tile rows at a time, du += V^T Z and dx (+)= the correlation of dZ with the
    flipped kernel (u_flip = `filter_transform(kernel, flip=True)`)."""
    n_, h, w, c = x.shape
    co = dy2.shape[1]
    th, tw = (oh + 3) // 4, (ow + 3) // 4  # output tiles (grad kernel)
    ih, iw = (h + 3) // 4, (w + 3) // 4  # input tiles (grad input)
    per = oh * ow
    for n0 in range(0, n_, samples):
        n1 = min(n0 + samples, n_)
        r0 = n0 * per
        r1 = n1 * per
        if relu:
            dz = dz_buf[:r1 - r0]
            relu_grad_rows(dy2[r0:r1], y2[r0:r1], dz, db, want_db)
        else:
            dz = dy2[r0:r1]
            if want_db:
                colsum_rows(dz, db)
        dz4 = dz.reshape((n1 - n0, oh, ow, co))
        if want_dk:
            xs = x[n0:n1]
            lines = (n1 - n0) * th
            for l0 in range(0, lines, step_k):
                l1 = min(l0 + step_k, lines)
                t = (l1 - l0) * tw
                v = vbuf[:36 * t * c].reshape((36, t, c))
                z = mbuf[:36 * t * co].reshape((36, t, co))
                input_transform(xs, l0, l1, pt, pl, th, tw, zero, ph, v)
                grad_transform(dz4, l0, l1, th, tw, zph, z)
                for xi in range(36):
                    gemm(simd, True, c, co, t, v[xi], c, z[xi], co, True, du[xi], co)
        if want_dx:
            gxs = dx[n0:n1]
            lines = (n1 - n0) * ih
            for l0 in range(0, lines, step_x):
                l1 = min(l0 + step_x, lines)
                t = (l1 - l0) * iw
                v = vbuf[:36 * t * co].reshape((36, t, co))
                m = mbuf[:36 * t * c].reshape((36, t, c))
                input_transform(dz4, l0, l1, 2 - pt, 2 - pl, ih, iw, dzero, dph, v)
                for xi in range(36):
                    gemm(simd, False, t, c, co, v[xi], co, u_flip[xi], c, False, m[xi], c)
                output_transform(m, l0, l1, ih, iw, u_flip[0, 0], False, False, accumulate_x, ds, gxs)
