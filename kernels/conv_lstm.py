"""Convolutional LSTM kernels (Keras' ConvLSTM1D/2D/3D), forward and backward through time, on the
convolution kernels of this package (1-D: `kernels.conv1d`, 2-D: `kernels.conv2d_dilated`, 3-D:
`kernels.conv3d`).

Input x (N, T, *spatial, C), kernel (*k, C, 4F), recurrent kernel (*k, F, 4F), bias (4F,), gates in Keras'
order i, f, c, o. At step t (reading x at s = t, or T - 1 - t with go_backwards):

    z = conv(x_s, kernel, strides, padding, dilation) + bias + conv(h, recurrent_kernel, 'same')
    i, f, o = rec(z_i), rec(z_f), rec(z_o);  g = act(z_c)
    c = f * c + i * g;  h = o * act(c)

The input convolutions of all steps are one call over the N * T frames; the recurrent one runs per step.
The forward keeps every step's z, c and h (the `saved` buffers, batch first); the backward walks back
through them: per step one element-wise pass for the gates and one recurrent convolution backward (the
recurrent kernel's gradient accumulated, h's gradient handed to the step before), then one input
convolution backward over all frames. The element-wise passes are Numba loops here and CUDA kernels in
`kernels.gpu.conv_lstm`; both call the activations' shared scalar formulas.
"""

from __future__ import annotations

import numpy as np

from kernels import activations as _acts
from kernels._jit import cpu_jit

__all__ = ["conv_lstm_forward_cpu", "conv_lstm_backward_cpu", "conv_lstm_forward_cuda", "conv_lstm_backward_cuda"]

_value, _grad = _acts.act_value, _acts.act_grad


# --- the convolutions, by rank and backend: forward(x, k, b, out, strides, padding, dilation) and
# backward(x, k, gy, gx, gk, gb, strides, padding, dilation, acc_x, acc_k, acc_b) -------------------------
def _convs(rank: int, backend: str):
    suffix = "cuda" if backend == "cuda" else "cpu"
    if rank == 1:
        from kernels import conv1d as m

        fwd, bwd = getattr(m, f"conv1d_forward_{suffix}"), getattr(m, f"conv1d_backward_{suffix}")

        def forward(x, k, b, out, strides, padding, dilation):
            fwd(x, k, b, out, strides[0], padding, dilation[0])

        def backward(x, k, gy, gx, gk, gb, strides, padding, dilation, ax, ak, ab):
            bwd(x, k, gy, gy, gx, gk, gb, strides[0], padding, dilation[0], None, None, ax, ak, ab)
    elif rank == 2:
        from kernels import conv2d_dilated as m

        fwd, bwd = getattr(m, f"conv2d_dilated_forward_{suffix}"), getattr(m, f"conv2d_dilated_backward_{suffix}")

        def forward(x, k, b, out, strides, padding, dilation):
            fwd(x, k, b, out, strides, padding, None, None, dilation=dilation)

        def backward(x, k, gy, gx, gk, gb, strides, padding, dilation, ax, ak, ab):
            bwd(x, k, gy, gy, gx, gk, gb, strides, padding, None, None, ax, ak, ab, dilation=dilation)
    else:
        from kernels import conv3d as m

        fwd, bwd = getattr(m, f"conv3d_forward_{suffix}"), getattr(m, f"conv3d_backward_{suffix}")

        def forward(x, k, b, out, strides, padding, dilation):
            fwd(x, k, b, out, strides, padding, dilation)

        def backward(x, k, gy, gx, gk, gb, strides, padding, dilation, ax, ak, ab):
            bwd(x, k, gy, gy, gx, gk, gb, strides, padding, dilation, None, None, ax, ak, ab)
    return forward, backward


# --- the element-wise passes (CPU) ----------------------------------------------------------------------
@cpu_jit
def _gates_forward(zx, s, zh, has_h, z, c, h, t, h_cur, seq, has_seq, a, r):
    # zx (N, T, P, 4F) the input convolutions, zh (N, P, 4F) the recurrent one; z (N, T, P, 4F), c and h
    # (N, T, P, F) the saved steps (written at t; c read at t - 1), h_cur (N, P, F) this step's h for the
    # next recurrent convolution, seq (N, T, P, F) the output sequence (written at t when has_seq)
    n_n, _, p_n, f4 = zx.shape
    f_n = f4 // 4
    for n in range(n_n):
        for p in range(p_n):
            for k in range(f_n):
                zi, zf = zx[n, s, p, k], zx[n, s, p, f_n + k]
                zg, zo = zx[n, s, p, 2 * f_n + k], zx[n, s, p, 3 * f_n + k]
                if has_h:
                    zi += zh[n, p, k]
                    zf += zh[n, p, f_n + k]
                    zg += zh[n, p, 2 * f_n + k]
                    zo += zh[n, p, 3 * f_n + k]
                z[n, t, p, k], z[n, t, p, f_n + k], z[n, t, p, 2 * f_n + k], z[n, t, p, 3 * f_n + k] = zi, zf, zg, zo
                i = _value(r[0], zi, r[1], r[2], r[3])
                f = _value(r[0], zf, r[1], r[2], r[3])
                g = _value(a[0], zg, a[1], a[2], a[3])
                o = _value(r[0], zo, r[1], r[2], r[3])
                cv = i * g + (f * c[n, t - 1, p, k] if has_h else 0.0)
                c[n, t, p, k] = cv
                hv = o * _value(a[0], cv, a[1], a[2], a[3])
                h[n, t, p, k] = hv
                h_cur[n, p, k] = hv
                if has_seq:
                    seq[n, t, p, k] = hv


@cpu_jit
def _gates_backward(z, c, t, dh_next, has_next, dseq, has_seq, dh_last, has_last, dc_next, has_dc, dz, dzx, s,
                    dc_prev, a, r):
    # dh = dh_next + dseq[:, t] + dh_last; dc = dc_next (+ through h); writes dz (N, P, 4F), dzx[:, s]
    # (N, T, P, 4F) and dc_prev (N, P, F), the gradient handed to the step before
    n_n, _, p_n, f4 = z.shape
    f_n = f4 // 4
    for n in range(n_n):
        for p in range(p_n):
            for k in range(f_n):
                zi, zf = z[n, t, p, k], z[n, t, p, f_n + k]
                zg, zo = z[n, t, p, 2 * f_n + k], z[n, t, p, 3 * f_n + k]
                i = _value(r[0], zi, r[1], r[2], r[3])
                f = _value(r[0], zf, r[1], r[2], r[3])
                g = _value(a[0], zg, a[1], a[2], a[3])
                o = _value(r[0], zo, r[1], r[2], r[3])
                cv = c[n, t, p, k]
                ac = _value(a[0], cv, a[1], a[2], a[3])
                dh = 0.0
                if has_next:
                    dh += dh_next[n, p, k]
                if has_seq:
                    dh += dseq[n, t, p, k]
                if has_last:
                    dh += dh_last[n, p, k]
                dc = dh * o * _grad(a[0], cv, ac, a[1], a[2], a[3])
                if has_dc:
                    dc += dc_next[n, p, k]
                cp = c[n, t - 1, p, k] if t > 0 else 0.0
                dzi = dc * g * _grad(r[0], zi, i, r[1], r[2], r[3])
                dzf = dc * cp * _grad(r[0], zf, f, r[1], r[2], r[3])
                dzg = dc * i * _grad(a[0], zg, g, a[1], a[2], a[3])
                dzo = dh * ac * _grad(r[0], zo, o, r[1], r[2], r[3])
                dz[n, p, k], dz[n, p, f_n + k], dz[n, p, 2 * f_n + k], dz[n, p, 3 * f_n + k] = dzi, dzf, dzg, dzo
                dzx[n, s, p, k], dzx[n, s, p, f_n + k] = dzi, dzf
                dzx[n, s, p, 2 * f_n + k], dzx[n, s, p, 3 * f_n + k] = dzg, dzo
                dc_prev[n, p, k] = dc * f


def _codes(act) -> tuple:
    """(code, p0, p1, p2) of an activation name or Activation, as the element-wise passes take it."""
    a = _acts.resolve_activation(act) if isinstance(act, str) else act
    return int(a.code), float(a.p0), float(a.p1), float(a.p2)


def _geometry(x, kernel, saved_z):
    """(N, T, rank, P: output positions per frame, F, the output's spatial shape)."""
    n, steps = int(x.shape[0]), int(x.shape[1])
    rank = x.ndim - 3
    spatial = tuple(int(v) for v in saved_z.shape[2:2 + rank])
    return n, steps, rank, int(np.prod(spatial)), int(kernel.shape[kernel.ndim - 1]) // 4, spatial


def _frames(a):
    """(N, T, *rest) as (N * T, *rest)."""
    return a.reshape(a.shape[0] * a.shape[1], *a.shape[2:])


def conv_lstm_forward_cpu(x, kernel, recurrent_kernel, bias, out, h_last, c_last, saved, strides, padding,
                          dilation, activation="tanh", recurrent_activation="sigmoid", go_backwards=False) -> None:
    """The forward pass on the CPU.

    Args:
        x: (N, T, *spatial, C) input.
        kernel: (*k, C, 4F); recurrent_kernel: (*k, F, 4F); bias: (4F,) or None.
        out: (N, T, *out_spatial, F) (return_sequences: every step's h, in the order processed) or
            (N, *out_spatial, F) (the last h); written.
        h_last, c_last: (N, *out_spatial, F) the last step's h and c, written (None: not asked).
        saved: (z, c, h) of every step, (N, T, *out_spatial, 4F / F / F), written for the backward.
        strides, padding, dilation: of the input convolution (tuples of the rank; padding valid/same).
        activation, recurrent_activation: `kernels.activations` names or Activations.
        go_backwards: read the frames last to first.
    """
    z_all, c_all, h_all = saved
    n, steps, rank, p, f, spatial = _geometry(x, kernel, z_all)
    forward, _ = _convs(rank, "cpu")
    dt = x.dtype
    zx = np.empty((n * steps, *spatial, 4 * f), dt)
    forward(_frames(np.ascontiguousarray(x)), kernel, bias, zx, strides, padding, dilation)
    zx4 = zx.reshape(n, steps, p, 4 * f)
    zh = np.empty((n, *spatial, 4 * f), dt)
    h_cur = np.empty((n, *spatial, f), dt)
    ones = (1,) * rank
    a, r = _codes(activation), _codes(recurrent_activation)
    seq = out.ndim == x.ndim
    z4, c4, h4 = (b.reshape(n, steps, p, -1) for b in saved)
    for t in range(steps):
        if t:
            forward(h_cur, recurrent_kernel, None, zh, ones, "same", ones)
        _gates_forward(zx4, steps - 1 - t if go_backwards else t, zh.reshape(n, p, 4 * f), t > 0, z4, c4, h4, t,
                       h_cur.reshape(n, p, f), out.reshape(n, steps, p, f) if seq else h4, seq, a, r)
    if not seq:
        out[...] = h_cur
    if h_last is not None:
        h_last[...] = h_cur
    if c_last is not None:
        c_last[...] = c_all[:, steps - 1]


def conv_lstm_backward_cpu(x, kernel, recurrent_kernel, saved, grad_out, grad_h, grad_c, grad_x, grad_kernel,
                           grad_recurrent, grad_bias, strides, padding, dilation, activation="tanh",
                           recurrent_activation="sigmoid", go_backwards=False, accumulate_x=False,
                           accumulate_kernel=False, accumulate_recurrent=False, accumulate_bias=False) -> None:
    """Gradients of `conv_lstm_forward_cpu`: `grad_out` is the gradient of `out` (None when it has none),
    `grad_h` / `grad_c` those of `h_last` / `c_last` (None: zero); the `grad_*` buffers receive (or with
    `accumulate_*` add) the gradients of x, the kernels and the bias (None: not asked)."""
    z_all, c_all, h_all = saved
    n, steps, rank, p, f, spatial = _geometry(x, kernel, z_all)
    _, backward = _convs(rank, "cpu")
    dt = x.dtype
    dzx = np.empty((n * steps, *spatial, 4 * f), dt)
    dzx4 = dzx.reshape(n, steps, p, 4 * f)
    dz = np.empty((n, *spatial, 4 * f), dt)
    dh_next = np.empty((n, *spatial, f), dt)
    h_prev = np.empty((n, *spatial, f), dt)
    dcs = [np.empty((n, p, f), dt), np.empty((n, p, f), dt)]
    ones = (1,) * rank
    a, r = _codes(activation), _codes(recurrent_activation)
    z4, c4 = z_all.reshape(n, steps, p, 4 * f), c_all.reshape(n, steps, p, f)
    seq = grad_out is not None and grad_out.ndim == x.ndim
    last = grad_out if grad_out is not None and not seq else None
    if grad_h is not None:
        last = grad_h if last is None else last + grad_h
    dseq = np.ascontiguousarray(grad_out).reshape(n, steps, p, f) if seq else dzx4[..., :f]
    dlast = dcs[1] if last is None else np.ascontiguousarray(last).reshape(n, p, f)
    dc_in = dcs[1] if grad_c is None else np.ascontiguousarray(grad_c).reshape(n, p, f)
    if grad_recurrent is not None and not accumulate_recurrent:
        grad_recurrent[...] = 0
    for t in range(steps - 1, -1, -1):
        end = t == steps - 1
        _gates_backward(z4, c4, t, dh_next.reshape(n, p, f), not end, dseq, seq, dlast, end and last is not None,
                        dc_in, not end or grad_c is not None, dz.reshape(n, p, 4 * f), dzx4,
                        steps - 1 - t if go_backwards else t, dcs[t % 2], a, r)
        dc_in = dcs[t % 2]
        if t:  # h before this step fed the recurrent convolution (the first step's is zero)
            h_prev[...] = h_all[:, t - 1]
            backward(h_prev, recurrent_kernel, dz, dh_next, grad_recurrent, None, ones, "same", ones, False, True,
                     False)
    backward(_frames(np.ascontiguousarray(x)), kernel, dzx, None if grad_x is None else _frames(grad_x),
             grad_kernel, grad_bias, strides, padding, dilation, accumulate_x, accumulate_kernel, accumulate_bias)


def conv_lstm_forward_cuda(*args, **kwargs) -> None:
    """The CUDA variant of `conv_lstm_forward_cpu` (same arguments, numba device arrays)."""
    from kernels.gpu import conv_lstm as _gpu

    _gpu.forward(*args, **kwargs)


def conv_lstm_backward_cuda(*args, **kwargs) -> None:
    """The CUDA variant of `conv_lstm_backward_cpu` (same arguments, numba device arrays)."""
    from kernels.gpu import conv_lstm as _gpu

    _gpu.backward(*args, **kwargs)
