"""CUDA twins of `kernels.depthwise_conv2d`: one thread per output element (forward), per input element
(grad input, gathering the windows that read it) and per kernel element (grad kernel)."""

from __future__ import annotations

from numba import cuda

from kernels.gpu import empty, launch
from kernels.gpu.channel_ops import bias_grad_cuda


@cuda.jit
def _forward(x, k, bias, has_bias, sh, sw, dh, dw, pt, pl, out):
    t = cuda.grid(1)
    if t < out.size:
        _, oh, ow, co = out.shape
        o = t % co
        j = (t // co) % ow
        i = (t // (co * ow)) % oh
        n = t // (co * ow * oh)
        dm = k.shape[3]
        ch = o // dm
        m = o % dm
        acc = bias[o] if has_bias else out.dtype.type(0)  # typed zero: float32 stays float32
        for a in range(k.shape[0]):
            ih = i * sh + a * dh - pt
            if ih >= 0 and ih < x.shape[1]:
                for b in range(k.shape[1]):
                    iw = j * sw + b * dw - pl
                    if iw >= 0 and iw < x.shape[2]:
                        acc += x[n, ih, iw, ch] * k[a, b, ch, m]
        out[n, i, j, o] = acc


@cuda.jit
def _grad_input(dy, k, sh, sw, dh, dw, pt, pl, accumulate, dx):
    t = cuda.grid(1)
    if t < dx.size:
        _, h, w, c = dx.shape
        ch = t % c
        iw = (t // c) % w
        ih = (t // (c * w)) % h
        n = t // (c * w * h)
        dm = k.shape[3]
        acc = dx.dtype.type(0)
        for a in range(k.shape[0]):
            r = ih + pt - a * dh
            if r >= 0 and r % sh == 0 and r // sh < dy.shape[1]:
                for b in range(k.shape[1]):
                    q = iw + pl - b * dw
                    if q >= 0 and q % sw == 0 and q // sw < dy.shape[2]:
                        for m in range(dm):
                            acc += dy[n, r // sh, q // sw, ch * dm + m] * k[a, b, ch, m]
        dx[n, ih, iw, ch] = dx[n, ih, iw, ch] + acc if accumulate else acc


@cuda.jit
def _grad_kernel(x, dy, sh, sw, dh, dw, pt, pl, accumulate, dk):
    t = cuda.grid(1)
    if t < dk.size:
        kh, kw, c, dm = dk.shape
        m = t % dm
        ch = (t // dm) % c
        b = (t // (dm * c)) % kw
        a = t // (dm * c * kw)
        acc = dk.dtype.type(0)
        for n in range(x.shape[0]):
            for i in range(dy.shape[1]):
                ih = i * sh + a * dh - pt
                if ih >= 0 and ih < x.shape[1]:
                    for j in range(dy.shape[2]):
                        iw = j * sw + b * dw - pl
                        if iw >= 0 and iw < x.shape[2]:
                            acc += x[n, ih, iw, ch] * dy[n, i, j, ch * dm + m]
        dk[a, b, ch, m] = dk[a, b, ch, m] + acc if accumulate else acc


def forward(g, x, kernel, bias, out) -> None:
    """out = depthwise(x, kernel) + bias for the geometry `g` (`depthwise_geometry`)."""
    b = bias if bias is not None else empty((1,), out.dtype)
    launch(_forward, out.size, x, kernel, b, bias is not None, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl, out)


def backward(g, x, kernel, grad_out, grad_x, grad_kernel, grad_bias, accumulate_x, accumulate_kernel,
             accumulate_bias) -> None:
    """The gradients of `forward` (None where one is not wanted)."""
    if grad_x is not None:
        launch(_grad_input, grad_x.size, grad_out, kernel, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl, accumulate_x,
               grad_x)
    if grad_kernel is not None:
        launch(_grad_kernel, grad_kernel.size, x, grad_out, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl,
               accumulate_kernel, grad_kernel)
    if grad_bias is not None:
        bias_grad_cuda(grad_out, grad_bias, accumulate_bias)
