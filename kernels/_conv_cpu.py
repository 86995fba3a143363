"""Numba CPU building blocks of the conv2d kernels: im2col / col2im over chunks of output lines, the fused
bias+ReLU epilogue and ReLU-gradient prologue, the direct 3x3 single-channel forward loop, and the
im2col + GEMM forward and backward drivers (one nogil call each; GEMMs through `_conv_simd`).

Every function is `@njit(nogil=True, cache=True)` and single-threaded: parallelism comes from the runtime
running data-parallel shards on several CPU processors at once. All work is per sample (a (H, W, C) view)
so that the buffers of one step stay in the core's L2 cache. Index arithmetic is written with loop
variables of `range`, or as unsigned offsets into flat arrays (`im2col_lines`), so LLVM can prove indices
non-negative and vectorise the innermost channel loops (signed flattened index arithmetic defeated that
and was 7x slower when measured).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels._conv_blas import gemm as blas_gemm
from kernels._conv_simd import gemm
from kernels._jit import u64 as _u


@njit(nogil=True, cache=True)
def im2col_lines(x3, l0, l1, sh, sw, pt, pl, oh, ow, c, cols):
    """Write the windows of output lines l0..l1 (a line is one output image row, over N*OH) into cols.

    x3 is the input viewed as (N, H, W*C); cols is ((l1-l0)*OW, KH, KW*C). Taps in the padding are zero.
    A window row that lies inside the image is one contiguous run of KW*C values (for any stride), so the
    interior is a straight copy; only border windows take the per-tap path. Both arrays are indexed flat
    with unsigned offsets: a window row is a short run (9 values for 3 channels), and a view per run
    (a reference count each) made CIFAR's first layer's im2col 1.8x slower (0.38 against 0.21 ms).
    """
    _, h, wc = x3.shape
    w = wc // c
    _, kh_, kwc = cols.shape
    kw_ = kwc // c
    xf = x3.reshape(-1)
    cf = cols.reshape(-1)
    kwu = _u(kwc)
    cu = _u(c)
    win = _u(kh_ * kwc)  # values per window (one row of cols)
    for line in range(l0, l1):
        n = line // oh
        i = line - n * oh
        q0 = _u((line - l0) * ow) * win
        for a in range(kh_):
            ih = i * sh + a - pt
            base = q0 + _u(a) * kwu
            if ih < 0 or ih >= h:
                for j in range(ow):
                    d = base + _u(j) * win
                    for t in range(kwu):
                        cf[d + t] = 0.0
                continue
            xrow = _u((n * h + ih) * wc)
            for j in range(ow):
                d = base + _u(j) * win
                iw0 = j * sw - pl
                if iw0 >= 0 and iw0 + kw_ <= w:
                    src = xrow + _u(iw0) * cu
                    for t in range(kwu):
                        cf[d + t] = xf[src + t]
                else:
                    for b in range(kw_):
                        iw = iw0 + b
                        db = d + _u(b) * cu
                        if iw < 0 or iw >= w:
                            for k in range(cu):
                                cf[db + k] = 0.0
                        else:
                            src = xrow + _u(iw) * cu
                            for k in range(cu):
                                cf[db + k] = xf[src + k]


@njit(nogil=True, cache=True)
def col2im_add_lines(cols, l0, l1, sh, sw, pt, pl, oh, ow, dx):
    """dx (N, H, W, C) += the windows in cols ((l1-l0)*OW, KH, KW, C): the adjoint of `im2col_lines`."""
    _, h, w, c = dx.shape
    _, kh_, kw_, _ = cols.shape
    for line in range(l0, l1):
        n = line // oh
        i = line - n * oh
        q0 = (line - l0) * ow
        for a in range(kh_):
            ih = i * sh + a - pt
            if ih < 0 or ih >= h:
                continue
            drow = dx[n, ih]
            for j in range(ow):
                q = q0 + j
                iw0 = j * sw - pl
                for b in range(kw_):
                    iw = iw0 + b
                    if iw >= 0 and iw < w:
                        for k in range(c):
                            drow[iw, k] += cols[q, a, b, k]


@njit(nogil=True, cache=True)
def bias_relu_rows(y, bias, has_bias, relu):
    """In place on y (P, CO): y += bias (if has_bias), then y = max(y, 0) (if relu; NaN stays NaN)."""
    p_, co = y.shape
    for p in range(p_):
        row = y[p]
        if has_bias and relu:
            for o in range(co):
                v = row[o] + bias[o]
                row[o] = 0.0 if v < 0.0 else v
        elif has_bias:
            for o in range(co):
                row[o] += bias[o]
        elif relu:
            for o in range(co):
                v = row[o]
                row[o] = 0.0 if v < 0.0 else v


@njit(nogil=True, cache=True)
def relu_grad_rows(dy, y, dz, db, want_db):
    """dz (P, CO) = dy where the ReLU output y > 0, else 0; db (CO,) += column sums of dz if want_db."""
    p_, co = dy.shape
    for p in range(p_):
        g = dy[p]
        yy = y[p]
        d = dz[p]
        for o in range(co):
            d[o] = g[o] if yy[o] > 0.0 else 0.0
        if want_db:
            for o in range(co):
                db[o] += d[o]


@njit(nogil=True, cache=True)
def colsum_rows(dz, db):
    """db (CO,) += the column sums of dz (P, CO)."""
    p_, co = dz.shape
    for p in range(p_):
        row = dz[p]
        for o in range(co):
            db[o] += row[o]


@njit(nogil=True, cache=True)
def grad_rows(dy2, y2, relu, r0, r1, dz_buf, db, want_db):
    """dZ for rows r0..r1 of a backward chunk: dy2 masked by the ReLU output y2 (into dz_buf) if relu,
    else dy2's rows themselves; db += its column sums when want_db."""
    if relu:
        dz = dz_buf[:r1 - r0]
        relu_grad_rows(dy2[r0:r1], y2[r0:r1], dz, db, want_db)
        return dz
    dz = dy2[r0:r1]
    if want_db:
        colsum_rows(dz, db)
    return dz


@njit(nogil=True, cache=True)
def _tap(x, n, r, c, h, w):
    # a float32 zero: a float64 literal would promote the caller's whole FMA loop to float64 (2x slower)
    return x[n, r, c, 0] if r >= 0 and r < h and c >= 0 and c < w else np.float32(0.0)


@njit(nogil=True, cache=True, fastmath={"contract"})
def direct3x3c1_forward(x, kernel, bias, relu, sh, sw, pt, pl, out):
    """out (N, OH, OW, CO) = conv(x (N, H, W, 1), kernel (3, 3, 1, CO)) + bias, then ReLU if relu.

    The nine window values sit in registers and the output-channel loop is innermost: one vectorised
    chain of nine FMAs per channel block and a single store (2.2x faster than im2col + sgemm here).
    The weights are read through one (9, CO) view (separate per-tap views made LLVM give up on
    vectorising: too many runtime alias checks) and `contract` lets it fuse the multiply-adds into FMAs;
    without either it ran 2.4x slower.
    """
    n_, h, w, _ = x.shape
    _, oh, ow, co = out.shape
    w9 = kernel.reshape(9, co)
    for n in range(n_):
        for i in range(oh):
            r = i * sh - pt
            for j in range(ow):
                c = j * sw - pl
                if r >= 0 and r + 3 <= h and c >= 0 and c + 3 <= w:
                    x0 = x[n, r, c, 0]
                    x1 = x[n, r, c + 1, 0]
                    x2 = x[n, r, c + 2, 0]
                    x3 = x[n, r + 1, c, 0]
                    x4 = x[n, r + 1, c + 1, 0]
                    x5 = x[n, r + 1, c + 2, 0]
                    x6 = x[n, r + 2, c, 0]
                    x7 = x[n, r + 2, c + 1, 0]
                    x8 = x[n, r + 2, c + 2, 0]
                else:
                    x0 = _tap(x, n, r, c, h, w)
                    x1 = _tap(x, n, r, c + 1, h, w)
                    x2 = _tap(x, n, r, c + 2, h, w)
                    x3 = _tap(x, n, r + 1, c, h, w)
                    x4 = _tap(x, n, r + 1, c + 1, h, w)
                    x5 = _tap(x, n, r + 1, c + 2, h, w)
                    x6 = _tap(x, n, r + 2, c, h, w)
                    x7 = _tap(x, n, r + 2, c + 1, h, w)
                    x8 = _tap(x, n, r + 2, c + 2, h, w)
                dst = out[n, i, j]
                if relu:
                    for o in range(co):
                        v = (bias[o] + x0 * w9[0, o] + x1 * w9[1, o] + x2 * w9[2, o] + x3 * w9[3, o]
                             + x4 * w9[4, o] + x5 * w9[5, o] + x6 * w9[6, o] + x7 * w9[7, o] + x8 * w9[8, o])
                        dst[o] = 0.0 if v < 0.0 else v
                else:
                    for o in range(co):
                        dst[o] = (bias[o] + x0 * w9[0, o] + x1 * w9[1, o] + x2 * w9[2, o] + x3 * w9[3, o]
                                  + x4 * w9[4, o] + x5 * w9[5, o] + x6 * w9[6, o] + x7 * w9[7, o]
                                  + x8 * w9[8, o])


@njit(nogil=True, cache=True)
def gemm_forward(x3, w2, bias, has_bias, relu, sh, sw, pt, pl, oh, ow, c, kh, step, cols, simd, out2):
    """The im2col + GEMM forward in one nogil call: out2 (N*OH*OW, CO) = act(cols(x) @ w2 + bias) in
    chunks of `step` output lines; cols is (step*OW, KH, KW*C) scratch; simd selects the `_conv_simd`
    GEMM micro-kernels where they apply (else NumPy's BLAS)."""
    depth, co = w2.shape
    lines = x3.shape[0] * oh
    for l0 in range(0, lines, step):
        l1 = min(l0 + step, lines)
        r0 = l0 * ow
        r1 = l1 * ow
        chunk = cols[:r1 - r0]
        im2col_lines(x3, l0, l1, sh, sw, pt, pl, oh, ow, c, chunk)
        rows = out2[r0:r1]
        gemm(simd, False, r1 - r0, co, depth, chunk, depth, w2, co, False, rows, co)
        if has_bias or relu:
            bias_relu_rows(rows, bias, has_bias, relu)


@njit(nogil=True, cache=True)
def fold_rows64(part, total, first):
    """total (float64, flat) = part (float32, flat) if first, else total += part."""
    if first:
        for i in range(part.size):
            total[i] = part[i]
    else:
        for i in range(part.size):
            total[i] += part[i]


@njit(nogil=True, cache=True)
def gemm_backward(x3, w, w_is_kernel, dy2, y2, relu, sh, sw, pt, pl, oh, ow, c, kh, kw, step, cols, dz_buf, want_db,
                  db, want_dk, gk2, gk64, fold_rows, want_dx, simd, dx):
    """The im2col + GEMM backward in one nogil call, per chunk of `step` output lines: dZ (dy2 masked by
    the ReLU output y2 if relu), db += colsum(dZ), gk64 = the sum of cols^T @ dZ, dx += col2im(dZ @ W^T),
    where `w` is the kernel matrix W (KH*KW*C, CO) itself when `w_is_kernel` (BLAS reads it transposed),
    else its transposed copy (CO, KH*KW*C) for the `simd` micro-kernels (as for `gemm_forward`).

    The kernel gradient is summed over the batch in float32 (gk2, (KH*KW*C, CO) scratch) for at least
    `fold_rows` output pixels at a time and those partial sums in float64 (gk64, same shape, overwritten).
    Returns False when the whole shard was one chunk: the sum is then in gk2 and gk64 is not written (a
    float64 copy of one float32 sum would change nothing, and for a large kernel over few pixels, such as
    3x3 512 -> 512 on 8 samples of 1x1 outputs, it was most of the kernel gradient's time).
    dx must be zeroed by the caller for overwrite semantics.
    """
    depth, co = (w.shape[0], w.shape[1]) if w_is_kernel else (w.shape[1], w.shape[0])
    lines = x3.shape[0] * oh
    part = gk2.reshape(-1)
    total = gk64.reshape(-1)
    since = 0  # output pixels summed into gk2 since its last fold into gk64
    folded = False
    for l0 in range(0, lines, step):
        l1 = min(l0 + step, lines)
        r0 = l0 * ow
        r1 = l1 * ow
        dz = grad_rows(dy2, y2, relu, r0, r1, dz_buf, db, want_db)
        chunk = cols[:r1 - r0]
        if want_dk:
            im2col_lines(x3, l0, l1, sh, sw, pt, pl, oh, ow, c, chunk)
            gemm(simd, True, depth, co, r1 - r0, chunk, depth, dz, co, since > 0, gk2, co)
            since += r1 - r0
            if l0 == 0 and l1 == lines:  # one chunk: gk2 holds the sum
                since = 0
            elif since >= fold_rows or l1 == lines:
                fold_rows64(part, total, not folded)
                folded = True
                since = 0
        if want_dx:
            if w_is_kernel:
                blas_gemm(False, True, r1 - r0, depth, co, 1.0, dz, co, w, co, 0.0, chunk, depth)
            else:
                gemm(simd, False, r1 - r0, depth, co, dz, co, w, depth, False, chunk, depth)
            col2im_add_lines(chunk.reshape((r1 - r0, kh, kw, c)), l0, l1, sh, sw, pt, pl, oh, ow, dx)
    if want_dk and lines == 0:  # no output pixels
        total[:] = 0.0
    return lines == 0 or folded
