"""CUDA helpers of `kernels.conv3d`: the depth gather of the input into (N * OD, H, W, KD * C), its transpose
for the gradient, the kernel folded to (KH, KW, KD * C, CO) and back, and the max pooling's gradient. Buffers are kept on the device
array they derive from (`kernels.gpu.memo`), so a step allocates nothing."""

from __future__ import annotations

from numba import cuda

from kernels.gpu import empty, launch, per_array, reshaped


@cuda.jit
def _gather(x, sd, dd, pf, od_n, xg):
    # one thread per element of xg (N * OD, H, W, KD * C)
    t = cuda.grid(1)
    if t < xg.size:
        _, h_n, w_n, kc_n = xg.shape
        c_n = x.shape[4]
        kc = t % kc_n
        w = (t // kc_n) % w_n
        h = (t // (kc_n * w_n)) % h_n
        r = t // (kc_n * w_n * h_n)
        kd = kc // c_n
        d = (r % od_n) * sd + kd * dd - pf
        if 0 <= d < x.shape[1]:
            xg[r, h, w, kc] = x[r // od_n, d, h, w, kc % c_n]
        else:
            xg[r, h, w, kc] = 0.0


@cuda.jit
def _scatter(gxg, sd, dd, pf, od_n, accumulate, gx):
    # one thread per element of gx (N, D, H, W, C): the sum over the taps that read it
    t = cuda.grid(1)
    if t < gx.size:
        _, d_n, h_n, w_n, c_n = gx.shape
        ch = t % c_n
        w = (t // c_n) % w_n
        h = (t // (c_n * w_n)) % h_n
        d = (t // (c_n * w_n * h_n)) % d_n
        n = t // (c_n * w_n * h_n * d_n)
        acc = gx.dtype.type(0)  # typed zero: float32 stays float32
        for kd in range(gxg.shape[3] // c_n):
            num = d + pf - kd * dd
            if num >= 0 and num % sd == 0 and num // sd < od_n:
                acc += gxg[n * od_n + num // sd, h, w, kd * c_n + ch]
        gx[n, d, h, w, ch] = gx[n, d, h, w, ch] + acc if accumulate else acc


@cuda.jit
def _fold(k5, k4):
    # k4[kh, kw, kd * C + c, o] = k5[kd, kh, kw, c, o]
    t = cuda.grid(1)
    if t < k4.size:
        kd_n, _, kw_n, c_n, co = k5.shape
        o = t % co
        kc = (t // co) % (kd_n * c_n)
        kw = (t // (co * kd_n * c_n)) % kw_n
        kh = t // (co * kd_n * c_n * kw_n)
        k4[kh, kw, kc, o] = k5[kc // c_n, kh, kw, kc % c_n, o]


@cuda.jit
def _unfold(k4, accumulate, k5):
    t = cuda.grid(1)
    if t < k5.size:
        _, kh_n, kw_n, c_n, co = k5.shape
        o = t % co
        c = (t // co) % c_n
        kw = (t // (co * c_n)) % kw_n
        kh = (t // (co * c_n * kw_n)) % kh_n
        kd = t // (co * c_n * kw_n * kh_n)
        v = k4[kh, kw, kd * c_n + c, o]
        k5[kd, kh, kw, c, o] = k5[kd, kh, kw, c, o] + v if accumulate else v


@cuda.jit
def _max_backward(x, y, dy, pd, ph, pw, sd, sh, sw, fd, fh, fw, accumulate, gx):
    # one thread per element of x: dy summed over the windows that hold it and whose maximum it equals
    t = cuda.grid(1)
    if t < x.size:
        _, d_n, h_n, w_n, c_n = x.shape
        od_n, oh_n, ow_n = y.shape[1], y.shape[2], y.shape[3]
        c = t % c_n
        w = (t // c_n) % w_n
        h = (t // (c_n * w_n)) % h_n
        d = (t // (c_n * w_n * h_n)) % d_n
        n = t // (c_n * w_n * h_n * d_n)
        v = x[n, d, h, w, c]
        acc = gx.dtype.type(0)  # typed zero: float32 stays float32
        for od in range(max(0, (d + fd - pd) // sd + 1), min(od_n - 1, (d + fd) // sd) + 1):
            for oh in range(max(0, (h + fh - ph) // sh + 1), min(oh_n - 1, (h + fh) // sh) + 1):
                for ow in range(max(0, (w + fw - pw) // sw + 1), min(ow_n - 1, (w + fw) // sw) + 1):
                    if y[n, od, oh, ow, c] == v:
                        acc += dy[n, od, oh, ow, c]
        gx[n, d, h, w, c] = gx[n, d, h, w, c] + acc if accumulate else acc


def max_pool_backward(x, out, grad_out, pool_size, strides, front, accumulate: bool, grad_x) -> None:
    """``grad_x (+)=`` the 3-D max pooling's gradient, sent to every element equal to its window's maximum."""
    launch(_max_backward, grad_x.size, x, out, grad_out, *pool_size, *strides, *front, accumulate, grad_x)


def scratch(a, name: str, shape, dtype):
    """A device buffer kept on the device array `a` (one per name and shape)."""
    shape = tuple(int(s) for s in shape)
    return per_array(a, ("conv3d", name, shape), lambda: empty(shape, dtype))


def rows(a, od: int):
    """(N, OD, OH, OW, C) as the (N * OD, OH, OW, C) view the 2-D kernels write."""
    n, _, oh, ow, c = (int(s) for s in a.shape)
    return reshaped(a, n * od, oh, ow, c)


def gathered(x, kd: int, sd: int, dd: int, pf: int, od: int, fill: bool = True):
    """x (N, D, H, W, C) gathered over the depth taps into (N * OD, H, W, KD * C) (with `fill` False, only
    the buffer: a backward that computes no kernel gradient never reads it)."""
    n, _, h, w, c = (int(s) for s in x.shape)
    xg = scratch(x, "xg", (n * od, h, w, int(kd) * c), x.dtype)
    if fill:
        launch(_gather, xg.size, x, sd, dd, pf, od, xg)
    return xg


def scatter(gxg, sd: int, dd: int, pf: int, od: int, accumulate: bool, grad_x) -> None:
    """``grad_x (+)=`` the gradient of the gathered input, summed back over the taps."""
    launch(_scatter, grad_x.size, gxg, sd, dd, pf, od, accumulate, grad_x)


def folded(kernel):
    """The (KH, KW, KD * C, CO) device kernel of a (KD, KH, KW, C, CO) one (rewritten at every call: the
    weights change between steps)."""
    kd, kh, kw, c, co = (int(s) for s in kernel.shape)
    k4 = scratch(kernel, "folded", (kh, kw, kd * c, co), kernel.dtype)
    launch(_fold, k4.size, kernel, k4)
    return k4


def unfold_kernel(k4, accumulate: bool, grad_kernel) -> None:
    """``grad_kernel (+)=`` the (KH, KW, KD * C, CO) gradient `k4` in the (KD, KH, KW, C, CO) layout."""
    launch(_unfold, grad_kernel.size, k4, accumulate, grad_kernel)
