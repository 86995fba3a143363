"""CUDA twins of `kernels.conv_lstm`: the gates' element-wise passes (one thread per output element of a
step) around the convolution kernels, and the loops through time. Scratch buffers are kept on the saved
arrays (`kernels.gpu.memo`), so a step allocates nothing."""

from __future__ import annotations

from numba import cuda

from kernels.conv_lstm import _codes, _convs, _geometry
from kernels.gpu import empty, launch, per_array, per_dtype, reshaped
from kernels.gpu.activations import scalar_functions


def _build(dt):
    value, grad = scalar_functions(dt)

    @cuda.jit
    def gates_forward(zx, s, zh, has_h, z, c, h, t, h_cur, seq, has_seq, ac, ap0, ap1, ap2, rc, rp0, rp1, rp2):
        e = cuda.grid(1)
        n_n, p_n, f_n = h_cur.shape
        if e < n_n * p_n * f_n:
            k = e % f_n
            p = (e // f_n) % p_n
            n = e // (f_n * p_n)
            zi, zf = zx[n, s, p, k], zx[n, s, p, f_n + k]
            zg, zo = zx[n, s, p, 2 * f_n + k], zx[n, s, p, 3 * f_n + k]
            if has_h:
                zi += zh[n, p, k]
                zf += zh[n, p, f_n + k]
                zg += zh[n, p, 2 * f_n + k]
                zo += zh[n, p, 3 * f_n + k]
            z[n, t, p, k], z[n, t, p, f_n + k], z[n, t, p, 2 * f_n + k], z[n, t, p, 3 * f_n + k] = zi, zf, zg, zo
            i = value(rc, zi, rp0, rp1, rp2)
            f = value(rc, zf, rp0, rp1, rp2)
            g = value(ac, zg, ap0, ap1, ap2)
            o = value(rc, zo, rp0, rp1, rp2)
            cv = i * g
            if has_h:
                cv += f * c[n, t - 1, p, k]
            c[n, t, p, k] = cv
            hv = o * value(ac, cv, ap0, ap1, ap2)
            h[n, t, p, k] = hv
            h_cur[n, p, k] = hv
            if has_seq:
                seq[n, t, p, k] = hv

    @cuda.jit
    def gates_backward(z, c, t, dh_next, has_next, dseq, has_seq, dla, has_a, dlb, has_b, dc_next, has_dc, dz, dzx,
                       s, dc_prev, ac, ap0, ap1, ap2, rc, rp0, rp1, rp2):
        e = cuda.grid(1)
        n_n, p_n, f_n = dc_prev.shape
        if e < n_n * p_n * f_n:
            k = e % f_n
            p = (e // f_n) % p_n
            n = e // (f_n * p_n)
            zi, zf = z[n, t, p, k], z[n, t, p, f_n + k]
            zg, zo = z[n, t, p, 2 * f_n + k], z[n, t, p, 3 * f_n + k]
            i = value(rc, zi, rp0, rp1, rp2)
            f = value(rc, zf, rp0, rp1, rp2)
            g = value(ac, zg, ap0, ap1, ap2)
            o = value(rc, zo, rp0, rp1, rp2)
            cv = c[n, t, p, k]
            act_c = value(ac, cv, ap0, ap1, ap2)
            zero = c.dtype.type(0)  # typed: a float32 kernel stays float32
            dh = zero
            if has_next:
                dh += dh_next[n, p, k]
            if has_seq:
                dh += dseq[n, t, p, k]
            if has_a:
                dh += dla[n, p, k]
            if has_b:
                dh += dlb[n, p, k]
            dc = dh * o * grad(ac, cv, act_c, ap0, ap1, ap2)
            if has_dc:
                dc += dc_next[n, p, k]
            cp = c[n, t - 1, p, k] if t > 0 else zero
            dzi = dc * g * grad(rc, zi, i, rp0, rp1, rp2)
            dzf = dc * cp * grad(rc, zf, f, rp0, rp1, rp2)
            dzg = dc * i * grad(ac, zg, g, ap0, ap1, ap2)
            dzo = dh * act_c * grad(rc, zo, o, rp0, rp1, rp2)
            dz[n, p, k], dz[n, p, f_n + k], dz[n, p, 2 * f_n + k], dz[n, p, 3 * f_n + k] = dzi, dzf, dzg, dzo
            dzx[n, s, p, k], dzx[n, s, p, f_n + k] = dzi, dzf
            dzx[n, s, p, 2 * f_n + k], dzx[n, s, p, 3 * f_n + k] = dzg, dzo
            dc_prev[n, p, k] = dc * f

    return gates_forward, gates_backward


def _kernels(dtype):
    return per_dtype("conv_lstm", dtype, _build)


def cuda_kernels() -> dict[str, object]:
    """The per-dtype kernels (see kernels.gpu.signatures)."""
    return {f"{name}[float32]": k for name, k in zip(("gates_forward", "gates_backward"), _kernels("float32"),
                                                         strict=True)}


@cuda.jit
def _zero(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = 0


@cuda.jit
def _take(src, t, dst):
    # dst (N, P, F) = src[:, t] of src (N, T, P, F)
    e = cuda.grid(1)
    n_n, p_n, f_n = dst.shape
    if e < dst.size:
        dst[e // (p_n * f_n), (e // f_n) % p_n, e % f_n] = src[e // (p_n * f_n), t, (e // f_n) % p_n, e % f_n]


def _scratch(a, name: str, shape, dtype):
    shape = tuple(int(v) for v in shape)
    return per_array(a, ("conv_lstm", name, shape), lambda: empty(shape, dtype))


def forward(x, kernel, recurrent_kernel, bias, out, h_last, c_last, saved, strides, padding, dilation,
            activation="tanh", recurrent_activation="sigmoid", go_backwards=False) -> None:
    """`kernels.conv_lstm.conv_lstm_forward_cpu` on device arrays."""
    from kernels.gpu.channel_ops import copy_cuda

    z_all, c_all, h_all = saved
    n, steps, rank, p, f, spatial = _geometry(x, kernel, z_all)
    conv, _ = _convs(rank, "cuda")
    dt = x.dtype
    zx = _scratch(z_all, "zx", (n * steps, *spatial, 4 * f), dt)
    conv(reshaped(x, n * steps, *x.shape[2:]), kernel, bias, zx, strides, padding, dilation)
    zh = _scratch(z_all, "zh", (n, *spatial, 4 * f), dt)
    h_cur = _scratch(z_all, "h", (n, *spatial, f), dt)
    ones = (1,) * rank
    z4, c4, h4 = (reshaped(b, n, steps, p, int(b.shape[b.ndim - 1])) for b in saved)
    seq = out.ndim == x.ndim
    for t in range(steps):
        if t:
            conv(h_cur, recurrent_kernel, None, zh, ones, "same", ones)
        launch(_kernels(dt)[0], n * p * f, reshaped(zx, n, steps, p, 4 * f), steps - 1 - t if go_backwards else t,
               reshaped(zh, n, p, 4 * f), t > 0, z4, c4, h4, t, reshaped(h_cur, n, p, f),
               reshaped(out, n, steps, p, f) if seq else h4, seq, *_codes(activation), *_codes(recurrent_activation))
    if not seq:
        copy_cuda(out, h_cur)
    if h_last is not None:
        copy_cuda(h_last, h_cur)
    if c_last is not None:
        launch(_take, c_last.size, c4, steps - 1, reshaped(c_last, n, p, f))


def backward(x, kernel, recurrent_kernel, saved, grad_out, grad_h, grad_c, grad_x, grad_kernel, grad_recurrent,
             grad_bias, strides, padding, dilation, activation="tanh", recurrent_activation="sigmoid",
             go_backwards=False, accumulate_x=False, accumulate_kernel=False, accumulate_recurrent=False,
             accumulate_bias=False) -> None:
    """`kernels.conv_lstm.conv_lstm_backward_cpu` on device arrays."""
    z_all, c_all, h_all = saved
    n, steps, rank, p, f, spatial = _geometry(x, kernel, z_all)
    _, conv_backward = _convs(rank, "cuda")
    dt = x.dtype
    dzx = _scratch(z_all, "dzx", (n * steps, *spatial, 4 * f), dt)
    dzx4 = reshaped(dzx, n, steps, p, 4 * f)
    dz = _scratch(z_all, "dz", (n, *spatial, 4 * f), dt)
    dh_next = _scratch(z_all, "dh", (n, *spatial, f), dt)
    h_prev = _scratch(z_all, "hp", (n, *spatial, f), dt)
    dcs = [_scratch(z_all, "dc0", (n, p, f), dt), _scratch(z_all, "dc1", (n, p, f), dt)]
    z4, c4, h4 = (reshaped(b, n, steps, p, int(b.shape[b.ndim - 1])) for b in saved)
    ones = (1,) * rank
    seq = grad_out is not None and grad_out.ndim == x.ndim
    dla = grad_out if grad_out is not None and not seq else None
    dseq = reshaped(grad_out, n, steps, p, f) if seq else h4
    if grad_recurrent is not None and not accumulate_recurrent:
        launch(_zero, grad_recurrent.size, reshaped(grad_recurrent, grad_recurrent.size))
    dc_in = reshaped(grad_c, n, p, f) if grad_c is not None else dcs[1]
    for t in range(steps - 1, -1, -1):
        end = t == steps - 1
        launch(_kernels(dt)[1], n * p * f, z4, c4, t, reshaped(dh_next, n, p, f), not end, dseq, seq,
               reshaped(dla if dla is not None else dh_next, n, p, f), end and dla is not None,
               reshaped(grad_h if grad_h is not None else dh_next, n, p, f), end and grad_h is not None,
               dc_in, not end or grad_c is not None, reshaped(dz, n, p, 4 * f), dzx4,
               steps - 1 - t if go_backwards else t, dcs[t % 2], *_codes(activation), *_codes(recurrent_activation))
        dc_in = dcs[t % 2]
        if t:
            launch(_take, h_prev.size, h4, t - 1, reshaped(h_prev, n, p, f))
            conv_backward(h_prev, recurrent_kernel, dz, dh_next, grad_recurrent, None, ones, "same", ones, False,
                          True, False)
    conv_backward(reshaped(x, n * steps, *x.shape[2:]), kernel, dzx,
                  None if grad_x is None else reshaped(grad_x, n * steps, *grad_x.shape[2:]), grad_kernel, grad_bias,
                  strides, padding, dilation, accumulate_x, accumulate_kernel, accumulate_bias)
