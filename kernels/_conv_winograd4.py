"""Winograd F(4x4, 3x3) for stride-1 3x3 convolutions on the CPU: forward, grad input and grad kernel.

On 4x4 output tiles read from 6x6 input tiles: 36 multiplies per (tile, C_in, C_out) for 16 outputs,
2.25 per output against 4 for F(2x2, 3x3) (`_conv_winograd`) and 9 for a direct correlation, and 2.25
transformed values per output against 4, so the transforms move about half the bytes too. Each of the
36 transformed positions xi is one GEMM over a chunk of tiles:

    forward      M[xi] (T x Co) = V[xi] (T x Ci) @ U[xi] (Ci x Co),   V = B^T d B,  U = G g G^T,  y = A^T M A
    grad kernel  dU[xi] (Ci x Co) += V[xi]^T @ Z[xi],  Z = A dz A^T,  dW = G^T dU G   (the adjoint)
    grad input   dV[xi] (T x Ci) = Z[xi] @ U[xi]^T,  dd = B dV B^T, added back over the overlapping
                 6x6 input tiles (the adjoint of the forward)

with the interpolation points 0, +-a, +-b and infinity, a = 5/8 and b = 3/2 (every constant a product of
them, exact in float32; G is solved for in float64, `_solve_g`):

    B^T = [[a2b2,    0,  -s,  0, 1, 0],     A^T = [[1,  1,   1,  1,   1, 0],
           [   0, -ab2, -b2,  a, 1, 0],            [0,  a,  -a,  b,  -b, 0],
           [   0,  ab2, -b2, -a, 1, 0],            [0, a2,  a2, b2,  b2, 0],
           [   0, -a2b, -a2,  b, 1, 0],            [0, a3, -a3, b3, -b3, 1]]
           [   0,  a2b, -a2, -b, 1, 0],
           [   0, a2b2,   0, -s, 0, 1]]         (a2 = a^2, ab2 = a b^2, s = a^2 + b^2, ...)

Lavin and Gray's points 0, +-1, +-2 (a = 1, b = 2) make the transforms scale values by up to 8 and
cancel: in float32 their error was 5-14e-6 of the largest magnitude of the output (measured on MNIST and
CIFAR CNN layers, 64 samples, float64 reference), 8-10 times TensorFlow's float32 convolution, and 3-8e-6
on the grad input (8-12 times). The error of the GEMMs in the transformed domain, carried through A^T,
dominates; a point set's weight on it is sum over xi of (A^T[j, xi] |B^T[xi]| |G[xi]|)^2 (Barabasz et al.,
"Error analysis and improving the accuracy of Winograd convolution for deep neural networks", 2020). A
search over symmetric dyadic pairs +-a, +-b for the least mean of it over forward, grad input and grad
kernel gave 5/8 and 3/2 (about half of 0, +-1, +-2's on average and a quarter at the worst output;
+-1/2, +-2 or 0, +-1, 1/2, -2 do less). Measured on the same layers: 1.3-3.6e-6 forward (1.8x
TensorFlow's on MNIST's conv2, 2.0x in the mean), 1.2-2.9e-6 grad input (4.5x, 3x in the mean). Symmetric
pairs keep the even/odd structure of the transforms, so they cost what 0, +-1, +-2's did.

Both gradients read the same Z, formed once per chunk with the ReLU gradient's mask, and the grad input
has as many tiles as the output. (`_conv_winograd`, like this module before, runs the forward map on dZ
padded by 2 - pad with the kernel flipped: a second transform of dZ, over the input's tiles, 49 instead
of 36 per sample on MNIST's conv2. With dZ formed in a pass of its own and larger chunks, that backward
took 6.8-7.1 ms there against 4.9-5.1 now, one thread, 32 samples.)

Its rounding error is still 2-5 times F(2x2, 3x3)'s. The transforms are staged like `_conv_winograd`'s: rows first, into a strip split into the four column
phases (column 4j + q in phase q, row j), so that the column transform is flat loops over tw*C
contiguous values with a few loads and one store each. Tiles past the image read zeros; outputs past the
end are dropped.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels._conv_simd import gemm
from kernels._jit import u64 as _u

# The interpolation points 0, +-PA, +-PB and infinity (see the module docstring); every constant below is a
# product of them, exact in float32.
PA, PB = 5 / 8, 3 / 2
_P, _S = PA * PA * PB * PB, PA * PA + PB * PB
B_T = np.array([[_P, 0, -_S, 0, 1, 0],
                [0, -PA * PB * PB, -PB * PB, PA, 1, 0], [0, PA * PB * PB, -PB * PB, -PA, 1, 0],
                [0, -PA * PA * PB, -PA * PA, PB, 1, 0], [0, PA * PA * PB, -PA * PA, -PB, 1, 0],
                [0, _P, 0, -_S, 0, 1]], dtype=np.float64)
_POINTS = np.array([0.0, PA, -PA, PB, -PB])
A_T = np.zeros((4, 6))
A_T[:, :5] = _POINTS[None, :] ** np.arange(4)[:, None]
A_T[3, 5] = 1.0


def _solve_g() -> np.ndarray:
    """G (6, 3) = diag(s) W, W the points' rows [1, p, p^2] ([0, 0, 1] for infinity), with the scales s
    for which A^T [(G g) * (B^T d)] is the correlation of d (6,) with g (3,): the coefficient of g_k d_i in
    output j must be 1 where i = j + k, else 0 (72 equations, solved in float64; residual ~1e-16)."""
    w = np.zeros((6, 3))
    w[:5] = _POINTS[:, None] ** np.arange(3)
    w[5, 2] = 1.0
    eqs = np.einsum("jx,xk,xi->jkix", A_T, w, B_T).reshape(-1, 6)
    j, k, i = np.meshgrid(np.arange(4), np.arange(3), np.arange(6), indexing="ij")
    scales = np.linalg.lstsq(eqs, (i == j + k).astype(np.float64).reshape(-1), rcond=None)[0]
    return scales[:, None] * w


G = _solve_g()
_GG = np.kron(G, G)  # (36, 9): vec(G g G^T) = (G kron G) vec(g)
# float32 constants: a float64 literal would promote float32 arithmetic to float64 inside the loops.
F0, F1 = np.float32(0.0), np.float32(1.0)
# Fused multiply-adds allowed (no other fast-math): the transforms' constants are no longer 1, 2, 4 and 8,
# and without fusion each of their products is a multiply and an add.
_CONTRACT = {"contract"}
# The backward's kernel gradient: chunks summed in float32 before their sum is added to the float64 total.
DK_FOLD_CHUNKS = 4
FA, FA2, FA3 = np.float32(PA), np.float32(PA ** 2), np.float32(PA ** 3)
FB, FB2, FB3 = np.float32(PB), np.float32(PB ** 2), np.float32(PB ** 3)
FAB2, FA2B = np.float32(PA * PB * PB), np.float32(PA * PA * PB)
FP, FS = np.float32(_P), np.float32(_S)


def filter_transform(kernel: np.ndarray, transpose: bool = False) -> np.ndarray:
    """U (36, Ci, Co) = G g G^T for a (3, 3, Ci, Co) kernel; with transpose, U with its channel axes
    swapped, (36, Co, Ci) (the grad input's; the small kernel is transposed, not U)."""
    g = np.asarray(kernel, np.float64)
    if transpose:
        g = g.transpose(0, 1, 3, 2)
    ci, co = g.shape[2], g.shape[3]
    u = _GG @ g.reshape(9, ci * co)
    return u.reshape(36, ci, co).astype(kernel.dtype)


def kernel_from_transform(du: np.ndarray) -> np.ndarray:
    """dW (3, 3, Ci, Co) = G^T dU G for dU (36, Ci, Co), in float64 (a float64 dU is read, not copied)."""
    ci, co = du.shape[1], du.shape[2]
    return (_GG.T @ np.asarray(du, np.float64).reshape(36, ci * co)).reshape(3, 3, ci, co)


@njit(nogil=True, cache=True, inline="always", fastmath=_CONTRACT)
def _flag(r, h):
    """1 for an image row r inside [0, h), else 0 (rows outside the image read as zeros)."""
    return F1 if 0 <= r < h else F0


@njit(nogil=True, cache=True, inline="always", fastmath=_CONTRACT)
def _inside(r, h):
    """Row r if it is inside [0, h), else row 0 (read, then multiplied by `_flag` = 0)."""
    return r if 0 <= r < h else 0


@njit(nogil=True, cache=True, inline="always", fastmath=_CONTRACT)
def _bt(src, s0, s1, s2, s3, s4, s5, dst, o, step, n):
    """B^T applied to six runs of n values of src (starting at s0..s5): dst[o + b*step + e] for the six
    rows b (the row stage of `input_transform`, and its column stage with the strip's phases). One loop
    per output row, so that each vectorizes (two arrays, unsigned offsets)."""
    for e in range(n):
        dst[o + e] = FP * src[s0 + e] - FS * src[s2 + e] + src[s4 + e]
    o += step
    for e in range(n):
        dst[o + e] = (src[s4 + e] - FB2 * src[s2 + e]) + FA * (src[s3 + e] - FB2 * src[s1 + e])
    o += step
    for e in range(n):
        dst[o + e] = (src[s4 + e] - FB2 * src[s2 + e]) - FA * (src[s3 + e] - FB2 * src[s1 + e])
    o += step
    for e in range(n):
        dst[o + e] = (src[s4 + e] - FA2 * src[s2 + e]) + FB * (src[s3 + e] - FA2 * src[s1 + e])
    o += step
    for e in range(n):
        dst[o + e] = (src[s4 + e] - FA2 * src[s2 + e]) - FB * (src[s3 + e] - FA2 * src[s1 + e])
    o += step
    for e in range(n):
        dst[o + e] = FP * src[s1 + e] - FS * src[s3 + e] + src[s5 + e]


@njit(nogil=True, cache=True, inline="always", fastmath=_CONTRACT)
def _a(src, s0, s1, s2, s3, dst, o, step, n):
    """A applied to four runs of n values of src (starting at s0..s3): dst[o + a*step + e] for the six
    rows a (both stages of `grad_transform`)."""
    for e in range(n):
        dst[o + e] = src[s0 + e]
    o += step
    for e in range(n):
        dst[o + e] = (src[s0 + e] + FA2 * src[s2 + e]) + FA * (src[s1 + e] + FA2 * src[s3 + e])
    o += step
    for e in range(n):
        dst[o + e] = (src[s0 + e] + FA2 * src[s2 + e]) - FA * (src[s1 + e] + FA2 * src[s3 + e])
    o += step
    for e in range(n):
        dst[o + e] = (src[s0 + e] + FB2 * src[s2 + e]) + FB * (src[s1 + e] + FB2 * src[s3 + e])
    o += step
    for e in range(n):
        dst[o + e] = (src[s0 + e] + FB2 * src[s2 + e]) - FB * (src[s1 + e] + FB2 * src[s3 + e])
    o += step
    for e in range(n):
        dst[o + e] = src[s3 + e]


@njit(nogil=True, cache=True, fastmath=_CONTRACT)
def input_transform(x, l0, l1, pt, pl, th, tw, zero, ph, v):
    """V (36, (l1-l0)*tw, C) = B^T d B of the 6x6 input tiles of tile rows l0..l1 of x (N, H, W, C).

    Tile row l is row ti = l % th of sample n = l // th; its tile tj reads image rows 4ti-pt.. and
    columns 4tj-pl.. (zeros outside the image). zero is a (W, C) array of zeros standing in for rows
    above/below the image; ph (6, 4, tw+1, C) is the row-transformed strip split into column phases.
    Offsets are unsigned (`_u`): Numba then indexes without the negative-index check, which kept these
    short loops from vectorizing as well as they do on array views, and views cost a reference-count
    update each (together 2.8x slower column transforms).
    """
    _, h, w, c = x.shape
    xf = x.reshape(-1)
    phf = ph.reshape(-1)
    vf = v.reshape(-1)
    cu = _u(c)
    twc = _u(tw * c)
    p = _u((tw + 1) * c)  # values per phase
    stride = _u(v.shape[1] * c)  # values per row of V
    rs = _u(w * c)  # values per image row
    for line in range(l0, l1):
        n = line // th
        ti = line - n * th
        r0 = 4 * ti - pt
        if r0 >= 0 and r0 + 6 <= h:  # every row inside: index x directly
            for col in range(4 * tw + 2):  # B^T along the rows, column by column of the strip
                q = col % 4
                j = col // 4
                s = col - pl
                o = _u((q * (tw + 1) + j) * c)
                ap = _u(4) * p
                if s < 0 or s >= w:
                    for a in range(6):
                        for k in range(cu):
                            phf[o + _u(a) * ap + k] = F0
                    continue
                b0 = _u(((n * h + r0) * w + s) * c)
                _bt(xf, b0, b0 + rs, b0 + _u(2) * rs, b0 + _u(3) * rs, b0 + _u(4) * rs, b0 + _u(5) * rs, phf, o, ap,
                    cu)
        else:  # a tile row across the top or bottom edge: rows outside count as zeros (flag 0)
            g0, g1, g2 = _flag(r0, h), _flag(r0 + 1, h), _flag(r0 + 2, h)
            g3, g4, g5 = _flag(r0 + 3, h), _flag(r0 + 4, h), _flag(r0 + 5, h)
            for col in range(4 * tw + 2):
                q = col % 4
                j = col // 4
                s = col - pl
                o = _u((q * (tw + 1) + j) * c)
                ap = _u(4) * p
                if s < 0 or s >= w:
                    for a in range(6):
                        for k in range(cu):
                            phf[o + _u(a) * ap + k] = F0
                    continue
                # rows outside read row 0 of the sample (any row inside) and are multiplied by 0
                b0 = _u(((n * h + _inside(r0, h)) * w + s) * c)
                b1 = _u(((n * h + _inside(r0 + 1, h)) * w + s) * c)
                b2 = _u(((n * h + _inside(r0 + 2, h)) * w + s) * c)
                b3 = _u(((n * h + _inside(r0 + 3, h)) * w + s) * c)
                b4 = _u(((n * h + _inside(r0 + 4, h)) * w + s) * c)
                b5 = _u(((n * h + _inside(r0 + 5, h)) * w + s) * c)
                for k in range(cu):
                    d0, d1, d2 = g0 * xf[b0 + k], g1 * xf[b1 + k], g2 * xf[b2 + k]
                    d3, d4, d5 = g3 * xf[b3 + k], g4 * xf[b4 + k], g5 * xf[b5 + k]
                    ea, oa = d4 - FB2 * d2, FA * d3 - FAB2 * d1
                    eb, ob = d4 - FA2 * d2, FB * d3 - FA2B * d1
                    phf[o + k] = FP * d0 - FS * d2 + d4
                    phf[o + ap + k] = ea + oa
                    phf[o + _u(2) * ap + k] = ea - oa
                    phf[o + _u(3) * ap + k] = eb + ob
                    phf[o + _u(4) * ap + k] = eb - ob
                    phf[o + _u(5) * ap + k] = FP * d1 - FS * d3 + d5
        t0 = _u((line - l0) * tw * c)
        for a in range(6):  # B along the columns: tile tj reads P0 P1 P2 P3 [tj] and P0 P1 [tj + 1]
            p0 = _u(4 * a) * p
            _bt(phf, p0, p0 + p, p0 + _u(2) * p, p0 + _u(3) * p, p0 + cu, p0 + p + cu, vf, _u(6 * a) * stride + t0,
                stride, twc)


@njit(nogil=True, cache=True, fastmath=_CONTRACT)
def output_transform(m, l0, l1, th, tw, bias, has_bias, relu, s, out):
    """out (N, OH, OW, C) = A^T M A (+ bias, then ReLU if relu) for the tile rows l0..l1 in M (36, T, C).

    s is (4, 6, tw, C) scratch. Bias and ReLU are applied as each value is stored (0.69 against 0.87 ms
    for MNIST's conv2 with a pass over each finished row after it). Offsets are unsigned, as in
    `input_transform`.
    """
    _, oh, ow, c = out.shape
    mf = m.reshape(-1)
    sf = s.reshape(-1)
    of = out.reshape(-1)
    cu = _u(c)
    twc = _u(tw * c)
    stride = _u(m.shape[1] * c)  # values per row of M
    bb = bias if has_bias else np.zeros(c, out.dtype)
    lo = out.dtype.type(0.0) if relu else out.dtype.type(-np.inf)
    for line in range(l0, l1):
        n = line // th
        ti = line - n * th
        t0 = _u((line - l0) * tw * c)
        for b in range(6):  # A^T along the rows: flat loops over the strip's tw*C values
            m0 = _u(b) * stride + t0
            m1 = m0 + _u(6) * stride
            m2 = m1 + _u(6) * stride
            m3 = m2 + _u(6) * stride
            m4 = m3 + _u(6) * stride
            m5 = m4 + _u(6) * stride
            o = _u(b) * twc
            r6 = _u(6) * twc
            for e in range(twc):
                sf[o + e] = mf[m0 + e] + mf[m1 + e] + mf[m2 + e] + mf[m3 + e] + mf[m4 + e]
            o += r6
            for e in range(twc):
                sf[o + e] = FA * (mf[m1 + e] - mf[m2 + e]) + FB * (mf[m3 + e] - mf[m4 + e])
            o += r6
            for e in range(twc):
                sf[o + e] = FA2 * (mf[m1 + e] + mf[m2 + e]) + FB2 * (mf[m3 + e] + mf[m4 + e])
            o += r6
            for e in range(twc):
                sf[o + e] = FA3 * (mf[m1 + e] - mf[m2 + e]) + FB3 * (mf[m3 + e] - mf[m4 + e]) + mf[m5 + e]
        for r in range(4):  # A along the columns, straight into the output rows
            i = 4 * ti + r
            if i >= oh:
                break
            row = _u((n * oh + i) * ow * c)
            for tj in range(tw):
                j = 4 * tj
                a0 = _u(r * 6) * twc + _u(tj) * cu
                a1 = a0 + twc
                a2 = a1 + twc
                a3 = a2 + twc
                a4 = a3 + twc
                a5 = a4 + twc
                y = row + _u(j) * cu
                # bias and ReLU fused into the stores (lo: 0 for ReLU, else -inf, so NaN stays NaN)
                for k in range(cu):
                    v = sf[a0 + k] + sf[a1 + k] + sf[a2 + k] + sf[a3 + k] + sf[a4 + k] + bb[k]
                    of[y + k] = lo if v < lo else v
                if j + 1 < ow:
                    y += cu
                    for k in range(cu):
                        v = FA * (sf[a1 + k] - sf[a2 + k]) + FB * (sf[a3 + k] - sf[a4 + k]) + bb[k]
                        of[y + k] = lo if v < lo else v
                if j + 2 < ow:
                    y += cu
                    for k in range(cu):
                        v = FA2 * (sf[a1 + k] + sf[a2 + k]) + FB2 * (sf[a3 + k] + sf[a4 + k]) + bb[k]
                        of[y + k] = lo if v < lo else v
                if j + 3 < ow:
                    y += cu
                    for k in range(cu):
                        v = (FA3 * (sf[a1 + k] - sf[a2 + k]) + FB3 * (sf[a3 + k] - sf[a4 + k]) + sf[a5 + k]
                             + bb[k])
                        of[y + k] = lo if v < lo else v


@njit(nogil=True, cache=True, inline="always", fastmath=_CONTRACT)
def _a_sum(df, s0, s1, s2, s3, dst, o, step, n):
    """`_a` for the row stage of `grad_transform`, with a seventh row: the sum of the four values (for the
    bias gradient: no point of this F(4x4, 3x3) is 1, so no row of Z is a tile's plain sum). Stored
    beside the other rows, not added into an array of sums: a third array kept this loop and `_a_relu`'s
    from vectorizing over 32 channels (the ReLU backward 4-5 times slower)."""
    for e in range(n):
        u0, u1, u2, u3 = df[s0 + e], df[s1 + e], df[s2 + e], df[s3 + e]
        ea, oa = u0 + FA2 * u2, FA * u1 + FA3 * u3
        eb, ob = u0 + FB2 * u2, FB * u1 + FB3 * u3
        dst[o + e] = u0
        dst[o + step + e] = ea + oa
        dst[o + _u(2) * step + e] = ea - oa
        dst[o + _u(3) * step + e] = eb + ob
        dst[o + _u(4) * step + e] = eb - ob
        dst[o + _u(5) * step + e] = u3
        dst[o + _u(6) * step + e] = u0 + u1 + u2 + u3


@njit(nogil=True, cache=True, inline="always", fastmath=_CONTRACT)
def _a_relu(df, yf, s0, s1, s2, s3, dst, o, step, n):
    """`_a_sum` on the ReLU gradient: each value of df counts where yf (the ReLU output) is > 0, else as 0.
    One loop storing all six rows (0.69 ms against 0.90 for masking into scratch first, MNIST conv2)."""
    for e in range(n):
        u0 = df[s0 + e] if yf[s0 + e] > F0 else F0
        u1 = df[s1 + e] if yf[s1 + e] > F0 else F0
        u2 = df[s2 + e] if yf[s2 + e] > F0 else F0
        u3 = df[s3 + e] if yf[s3 + e] > F0 else F0
        ea, oa = u0 + FA2 * u2, FA * u1 + FA3 * u3
        eb, ob = u0 + FB2 * u2, FB * u1 + FB3 * u3
        dst[o + e] = u0
        dst[o + step + e] = ea + oa
        dst[o + _u(2) * step + e] = ea - oa
        dst[o + _u(3) * step + e] = eb + ob
        dst[o + _u(4) * step + e] = eb - ob
        dst[o + _u(5) * step + e] = u3
        dst[o + _u(6) * step + e] = u0 + u1 + u2 + u3


@njit(nogil=True, cache=True, fastmath=_CONTRACT)
def grad_transform(dy, y, relu, l0, l1, th, tw, ph, z, db):
    """Z (36, (l1-l0)*tw, C) = A dz A^T of the 4x4 tiles of tile rows l0..l1 of dz (N, OH, OW, C) (zeros
    past the edge), where dz is dy, or with relu dy masked by the ReLU output y (dy where y > 0, else 0:
    the ReLU gradient, read straight from dy and y), and db (C,) (float64) += the sums of dz over those
    rows; ph (7, 4, tw, C) holds the row-transformed strip split into column phases, and the sums of
    each column's four values (row 6). Offsets are
    unsigned, as in `input_transform`."""
    _, oh, ow, c = dy.shape
    df = dy.reshape(-1)
    yf = y.reshape(-1)
    phf = ph.reshape(-1)
    zf = z.reshape(-1)
    cu = _u(c)
    twc = _u(tw * c)
    p = _u(tw * c)  # values per phase
    ap = _u(4) * p
    stride = _u(z.shape[1] * c)
    rs = _u(ow * c)
    for line in range(l0, l1):
        n = line // th
        ti = line - n * th
        i0 = 4 * ti
        last = min(oh - i0, 4)  # rows of this tile row inside the image
        f1 = F1 if last > 1 else F0  # rows past the image count as zeros (and read the last row)
        f2 = F1 if last > 2 else F0
        f3 = F1 if last > 3 else F0
        k1 = rs if last > 1 else _u(0)
        k2 = _u(2) * rs if last > 2 else k1
        k3 = _u(3) * rs if last > 3 else k2
        for col in range(4 * tw):  # A along the rows
            q = col % 4
            j = col // 4
            o = _u((q * tw + j) * c)
            if col >= ow:
                for a in range(7):
                    for k in range(cu):
                        phf[o + _u(a) * ap + k] = F0
                continue
            b0 = _u(((n * oh + i0) * ow + col) * c)
            b1 = b0 + k1
            b2 = b0 + k2
            b3 = b0 + k3
            if last == 4 and relu:
                _a_relu(df, yf, b0, b1, b2, b3, phf, o, ap, cu)
            elif last == 4:
                _a_sum(df, b0, b1, b2, b3, phf, o, ap, cu)
            else:
                for k in range(cu):
                    u0 = df[b0 + k]
                    u1 = f1 * df[b1 + k]
                    u2 = f2 * df[b2 + k]
                    u3 = f3 * df[b3 + k]
                    if relu:
                        u0 = u0 if yf[b0 + k] > F0 else F0
                        u1 = u1 if yf[b1 + k] > F0 else F0
                        u2 = u2 if yf[b2 + k] > F0 else F0
                        u3 = u3 if yf[b3 + k] > F0 else F0
                    ea, oa = u0 + FA2 * u2, FA * u1 + FA3 * u3
                    eb, ob = u0 + FB2 * u2, FB * u1 + FB3 * u3
                    phf[o + k] = u0
                    phf[o + ap + k] = ea + oa
                    phf[o + _u(2) * ap + k] = ea - oa
                    phf[o + _u(3) * ap + k] = eb + ob
                    phf[o + _u(4) * ap + k] = eb - ob
                    phf[o + _u(5) * ap + k] = u3
                    phf[o + _u(6) * ap + k] = u0 + u1 + u2 + u3
        for qj in range(4 * tw):  # the bias gradient: row 6 summed over the columns
            r6 = _u(6) * ap + _u(qj) * cu
            for k in range(cu):
                db[k] += phf[r6 + k]
        t0 = _u((line - l0) * tw * c)
        for a in range(6):  # A^T along the columns: tile tj uses columns P0..P3[tj]
            p0 = _u(a) * ap
            _a(phf, p0, p0 + p, p0 + _u(2) * p, p0 + _u(3) * p, zf, _u(6 * a) * stride + t0, stride, twc)


@njit(nogil=True, cache=True, inline="always", fastmath=_CONTRACT)
def _b(src, s0, s1, s2, s3, s4, s5, dst, o, step, n):
    """B applied to six runs of n values of src (starting at s0..s5): dst[o + r*step + e] for the six
    rows r (both stages of `input_grad_transform`; B is the transpose of `_bt`'s B^T). One loop storing
    all six rows: 11% faster there than six loops (0.46 against 0.52 ms on MNIST's conv2)."""
    for e in range(n):
        v0 = src[s0 + e]
        v1 = src[s1 + e]
        v2 = src[s2 + e]
        v3 = src[s3 + e]
        v4 = src[s4 + e]
        v5 = src[s5 + e]
        dst[o + e] = FP * v0
        dst[o + step + e] = FAB2 * (v2 - v1) + FA2B * (v4 - v3) + FP * v5
        dst[o + _u(2) * step + e] = -(FS * v0 + FB2 * (v1 + v2) + FA2 * (v3 + v4))
        dst[o + _u(3) * step + e] = FA * (v1 - v2) + FB * (v3 - v4) - FS * v5
        dst[o + _u(4) * step + e] = v0 + v1 + v2 + v3 + v4
        dst[o + _u(5) * step + e] = v5


@njit(nogil=True, cache=True, fastmath=_CONTRACT)
def input_grad_transform(m, l0, l1, th, tw, pt, pl, accumulate, s, d, dx):
    """dx (N, H, W, C) (+)= B dV B^T of the tile rows l0..l1 in dV = m (36, T, C): the adjoint of
    `input_transform`, each 6x6 tile added back where its input tile was read (image row 4ti-pt+r,
    column 4tj-pl+q; rows and columns outside the image are dropped).

    Tiles overlap by two rows and two columns. Tile rows and tiles are visited in order, so without
    accumulate a value is stored where it is first written (rows r >= 2 of a tile row, or r < 2 of the
    first; columns likewise) and added elsewhere: dx is overwritten without a zeroing pass. s is
    (6, 6, tw, C) and d (6, tw, C) scratch; offsets are unsigned, as in `input_transform`.
    """
    _, h, w, c = dx.shape
    mf = m.reshape(-1)
    sf = s.reshape(-1)
    df = d.reshape(-1)
    of = dx.reshape(-1)
    cu = _u(c)
    twc = _u(tw * c)
    stride = _u(m.shape[1] * c)  # values per row of M
    for line in range(l0, l1):
        n = line // th
        ti = line - n * th
        t0 = _u((line - l0) * tw * c)
        for b in range(6):  # B along the rows (the first index of dV): S[r, b], flat over the strip
            m0 = _u(b) * stride + t0
            _b(mf, m0, m0 + _u(6) * stride, m0 + _u(12) * stride, m0 + _u(18) * stride, m0 + _u(24) * stride,
               m0 + _u(30) * stride, sf, _u(b) * twc, _u(6) * twc, twc)
        for r in range(6):  # B along the columns, into d[col], then scattered into the image row
            i = 4 * ti - pt + r
            if i < 0 or i >= h:
                continue
            r0 = _u(6 * r) * twc
            _b(sf, r0, r0 + twc, r0 + _u(2) * twc, r0 + _u(3) * twc, r0 + _u(4) * twc, r0 + _u(5) * twc, df,
               _u(0), twc, twc)
            row = _u((n * h + i) * w * c)
            add_row = accumulate or (r < 2 and ti > 0)
            for tj in range(tw):
                for q in range(6):
                    j = 4 * tj - pl + q
                    if j < 0 or j >= w:
                        continue
                    src = _u(q) * twc + _u(tj) * cu
                    dst = row + _u(j) * cu
                    if add_row or (q < 2 and tj > 0):
                        for k in range(cu):
                            of[dst + k] += df[src + k]
                    else:
                        for k in range(cu):
                            of[dst + k] = df[src + k]


@njit(nogil=True, cache=True, fastmath=_CONTRACT)
def add_f64(a, acc, first):
    """acc (float64) += a, or with first acc = a; both (36, Ci, Co)."""
    af = a.reshape(-1)
    accf = acc.reshape(-1)
    if first:
        for e in range(af.size):
            accf[e] = af[e]
    else:
        for e in range(af.size):
            accf[e] += af[e]


@njit(nogil=True, cache=True, fastmath=_CONTRACT)
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
        output_transform(m, l0, l1, th, tw, bias, has_bias, relu, s, out)


@njit(nogil=True, cache=True, fastmath=_CONTRACT)
def backward(x, dy, y, relu, u_t, pt, pl, step, zero, ph, zph, s, d, vbuf, zbuf, want_db, db, want_dk, du,
             du64, want_dx, accumulate_x, simd, dx):
    """The F(4x4, 3x3) backward in one nogil call, `step` output tile rows at a time: Z = A dz A^T of the
    gradient dz (dy (N, OH, OW, Co) masked by the ReLU output y if relu, in `grad_transform`, which adds
    the sums of dz to db (float64) as it reads them) once, then du64 (float64) += V^T Z with
    V = B^T x B (`input_transform`) and dx (+)= B (Z U^T) B^T (`input_grad_transform`), the adjoint of
    the forward, where u_t (36, Co, Ci) is `filter_transform(kernel)` with its channel axes swapped.
    V^T Z is summed in float32 into du (36, Ci, Co) over DK_FOLD_CHUNKS chunks at most, then added to
    du64: summed over all chunks in float32, the kernel gradient of MNIST's conv2 at 64 samples (65
    chunks) had 4e-5 of its largest magnitude for error, 40 times TensorFlow's. vbuf and zbuf are flat
    scratch of 36*step*tw*(C or Co) values; simd as for `forward`."""
    c = x.shape[3]
    _, oh, ow, co = dy.shape
    th, tw = (oh + 3) // 4, (ow + 3) // 4
    lines = x.shape[0] * th
    folded = 0  # chunks summed into du since it was last added to du64
    first = True  # du64 not written yet
    for l0 in range(0, lines, step):
        l1 = min(l0 + step, lines)
        t = (l1 - l0) * tw
        z = zbuf[:36 * t * co].reshape((36, t, co))
        v = vbuf[:36 * t * c].reshape((36, t, c))  # V for du, then dV for dx
        grad_transform(dy, y, relu, l0, l1, th, tw, zph, z, db)
        if want_dk:
            input_transform(x, l0, l1, pt, pl, th, tw, zero, ph, v)
            for xi in range(36):
                gemm(simd, True, c, co, t, v[xi], c, z[xi], co, folded > 0, du[xi], co)
            folded += 1
            if folded == DK_FOLD_CHUNKS or l1 == lines:
                add_f64(du, du64, first)
                folded = 0
                first = False
        if want_dx:
            for xi in range(36):
                gemm(simd, False, t, c, co, z[xi], co, u_t[xi], c, False, v[xi], c)
            input_grad_transform(v, l0, l1, th, tw, pt, pl, accumulate_x, s, d, dx)
    if want_dk and first:  # no samples
        du64[...] = 0.0
