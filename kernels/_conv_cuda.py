"""CUDA (numba.cuda) conv2d kernels: tiled implicit GEMMs over shared-memory tiles, NHWC, Keras kernel
layout (KH, KW, C_in, C_out), any strides and any top/left padding offsets ("same" or explicit pads, see
`_conv_geometry`; the bottom/right pads only set the output size).

Each pass is one GEMM whose operands are gathered on the fly (no im2col buffer in device memory):

- forward      out (P x C_out)      = cols(x) (P x K)          @ W (K x C_out),  K = KH*KW*C_in
- grad kernel  dW (K x C_out)      += cols(x)^T (K x P)        @ dZ (P x C_out), split over P, atomics
- grad input   dX (N*H*W x C_in)  (+)= dZ-windows (.. x KH*KW*C_out) @ W^T

A block of TILE x TILE threads computes a TILE x TILE output tile; `threadIdx.y` walks the tile's rows,
`threadIdx.x` its columns, so global loads and stores along C_out / C_in are coalesced. dZ (the gradient
before the activation) is formed once per backward by an elementwise kernel. The grad input is a gather
over every input pixel, so pixels no window reads (a spatial tile's trailing rows) get exactly zero (or
keep their value when accumulating). Launch arithmetic lives in `kernels.gpu.launch`. Activations are the
device versions of `kernels.activations`' scalar functions.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from kernels import activations as _acts
from kernels.gpu import reshaped
from kernels.gpu.launch import launch, launch_blocks, launch_tiled
from kernels.gpu.scalar_source import device_function

TILE = 16  # shared-memory tile edge: TILE x TILE threads per block, TILE x TILE floats per tile
SPLIT_ROWS = 4096  # output pixels reduced by one block of the grad-kernel GEMM before its atomic add

_act_value = device_function(_acts.SCALAR_SOURCES[0])
_act_grad = device_function(_acts.SCALAR_SOURCES[1])


@cuda.jit
def _forward_kernel(x, w2, bias, has_bias, code, p0, p1, p2, kw, sh, sw, pt, pl, oh, ow, keep_pre, pre2, out2):
    n_, h, w, c = x.shape
    depth, co = w2.shape
    a_tile = cuda.shared.array((TILE, TILE), np.float32)  # [pixel][tap] window values
    b_tile = cuda.shared.array((TILE, TILE), np.float32)  # [tap][out channel] weights
    ty = cuda.threadIdx.y
    tx = cuda.threadIdx.x
    p = cuda.blockIdx.y * TILE + ty  # output pixel (row of out2) this thread accumulates
    o = cuda.blockIdx.x * TILE + tx  # output channel this thread accumulates
    rows = n_ * oh * ow
    n = p // (oh * ow)
    i = (p // ow) % oh
    j = p % ow
    acc = np.float32(0.0)
    for d0 in range(0, depth, TILE):
        d = d0 + tx  # tap loaded by this thread into a_tile
        val = np.float32(0.0)
        if p < rows and d < depth:
            k = d % c
            b = (d // c) % kw
            a = d // (c * kw)
            r = i * sh + a - pt
            s = j * sw + b - pl
            if r >= 0 and r < h and s >= 0 and s < w:
                val = x[n, r, s, k]
        a_tile[ty, tx] = val
        dr = d0 + ty
        b_tile[ty, tx] = w2[dr, o] if dr < depth and o < co else np.float32(0.0)
        cuda.syncthreads()  # both tiles loaded by the whole block
        for t in range(TILE):
            acc += a_tile[ty, t] * b_tile[t, tx]
        cuda.syncthreads()  # every thread done reading before the next tiles overwrite them
    if p < rows and o < co:
        if has_bias:
            acc += bias[o]
        if keep_pre:
            pre2[p, o] = acc
        out2[p, o] = _act_value(code, acc, p0, p1, p2)


@cuda.jit
def _act_grad_kernel(dy2, z2, y2, code, p0, p1, p2, dz2):
    o, p = cuda.grid(2)  # x: output channel (coalesced), y: pixel
    if p < dy2.shape[0] and o < dy2.shape[1]:
        dz2[p, o] = dy2[p, o] * _act_grad(code, z2[p, o], y2[p, o], p0, p1, p2)


@cuda.jit
def _grad_kernel_kernel(x, dz2, kw, sh, sw, pt, pl, oh, ow, split_rows, dw2):
    n_, h, w, c = x.shape
    depth, co = dw2.shape
    rows = dz2.shape[0]
    a_tile = cuda.shared.array((TILE, TILE), np.float32)  # [tap][pixel] window values (cols^T)
    b_tile = cuda.shared.array((TILE, TILE), np.float32)  # [pixel][out channel] dZ
    ty = cuda.threadIdx.y
    tx = cuda.threadIdx.x
    d = cuda.blockIdx.y * TILE + ty  # tap (row of dW) this thread accumulates
    o = cuda.blockIdx.x * TILE + tx  # output channel this thread accumulates
    start = cuda.blockIdx.z * split_rows
    stop = min(start + split_rows, rows)
    k = d % c
    b = (d // c) % kw
    a = d // (c * kw)
    acc = np.float32(0.0)
    for p0 in range(start, stop, TILE):
        p = p0 + tx  # pixel loaded by this thread into a_tile
        val = np.float32(0.0)
        if p < stop and d < depth:
            n = p // (oh * ow)
            r = ((p // ow) % oh) * sh + a - pt
            s = (p % ow) * sw + b - pl
            if r >= 0 and r < h and s >= 0 and s < w:
                val = x[n, r, s, k]
        a_tile[ty, tx] = val
        pr = p0 + ty
        b_tile[ty, tx] = dz2[pr, o] if pr < stop and o < co else np.float32(0.0)
        cuda.syncthreads()  # both tiles loaded by the whole block
        for t in range(TILE):
            acc += a_tile[ty, t] * b_tile[t, tx]
        cuda.syncthreads()  # every thread done reading before the next tiles overwrite them
    if d < depth and o < co:
        cuda.atomic.add(dw2, (d, o), acc)


@cuda.jit
def _grad_input_kernel(dz2, w4, sh, sw, pt, pl, oh, ow, accumulate, dx):
    n_, h, w, c = dx.shape
    kh, kw, _, co = w4.shape
    depth = kh * kw * co
    a_tile = cuda.shared.array((TILE, TILE), np.float32)  # [input pixel][(tap, out channel)] dZ values
    b_tile = cuda.shared.array((TILE, TILE), np.float32)  # [(tap, out channel)][in channel] weights
    ty = cuda.threadIdx.y
    tx = cuda.threadIdx.x
    q = cuda.blockIdx.y * TILE + ty  # input pixel this thread accumulates
    k = cuda.blockIdx.x * TILE + tx  # input channel this thread accumulates
    pixels = n_ * h * w
    n = q // (h * w)
    r = (q // w) % h
    s = q % w
    acc = np.float32(0.0)
    for e0 in range(0, depth, TILE):
        e = e0 + tx  # (tap, out channel) loaded by this thread into a_tile
        val = np.float32(0.0)
        if q < pixels and e < depth:
            o = e % co
            b = (e // co) % kw
            a = e // (co * kw)
            ti = r + pt - a
            tj = s + pl - b
            if ti >= 0 and tj >= 0 and ti % sh == 0 and tj % sw == 0:
                i = ti // sh
                j = tj // sw
                if i < oh and j < ow:
                    val = dz2[(n * oh + i) * ow + j, o]
        a_tile[ty, tx] = val
        er = e0 + ty
        wv = np.float32(0.0)
        if er < depth and k < c:
            wv = w4[er // (co * kw), (er // co) % kw, k, er % co]
        b_tile[ty, tx] = wv
        cuda.syncthreads()  # both tiles loaded by the whole block
        for t in range(TILE):
            acc += a_tile[ty, t] * b_tile[t, tx]
        cuda.syncthreads()  # every thread done reading before the next tiles overwrite them
    if q < pixels and k < c:
        if accumulate:
            acc += dx[n, r, s, k]
        dx[n, r, s, k] = acc


@cuda.jit
def _bias_grad_kernel(dz2, split_rows, db):
    o = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    start = cuda.blockIdx.y * split_rows
    stop = min(start + split_rows, dz2.shape[0])
    if o < dz2.shape[1]:
        acc = np.float32(0.0)
        for p in range(start, stop):
            acc += dz2[p, o]
        cuda.atomic.add(db, o, acc)


@cuda.jit
def _fill_kernel(flat, value):
    i = cuda.grid(1)
    if i < flat.shape[0]:
        flat[i] = value


def _fill(arr, value: float) -> None:
    flat = reshaped(arr, arr.size)
    launch(_fill_kernel, arr.size, flat, value)


def _check_float32(who: str, **arrays) -> None:
    for name, a in arrays.items():
        if a is not None and np.dtype(a.dtype) != np.float32:
            raise ValueError(f"{who}: the CUDA kernels take float32 arrays, received {name} of dtype {a.dtype}.")


def forward(g, x, kernel, bias, out, act, pre) -> None:
    """out = act(conv(x, kernel) + bias) on device arrays (pre, if given, keeps conv + bias)."""
    _check_float32("conv2d_forward_cuda", x=x, kernel=kernel, bias=bias, out=out, pre_activation=pre)
    w2 = reshaped(kernel, g.depth, g.co)
    out2 = reshaped(out, g.rows, g.co)
    b = bias if bias is not None else cuda.device_array(1, np.float32)
    pre2 = reshaped(pre, g.rows, g.co) if pre is not None else out2
    launch_tiled(_forward_kernel, g.rows, g.co, TILE, x, w2, b, bias is not None, act.code, act.p0, act.p1,
                 act.p2, g.kw, g.sh, g.sw, g.pt, g.pl, g.oh, g.ow, pre is not None, pre2, out2)


def backward(g, x, kernel, out, pre, grad_out, grad_x, grad_kernel, grad_bias, act, accumulate_x,
             accumulate_kernel, accumulate_bias) -> None:
    """Gradients of `forward` on device arrays (None where a gradient is not wanted); `pre` is the
    pre-activation (or the output, for activations whose gradient follows from it)."""
    _check_float32("conv2d_backward_cuda", x=x, kernel=kernel, out=out, grad_out=grad_out, grad_x=grad_x,
                   grad_kernel=grad_kernel, grad_bias=grad_bias, pre_activation=pre)
    dy2 = reshaped(grad_out, g.rows, g.co)
    if act.code == _acts.LINEAR:
        dz2 = dy2
    else:
        dz2 = cuda.device_array((g.rows, g.co), np.float32)
        launch_tiled(_act_grad_kernel, g.rows, g.co, TILE, dy2, reshaped(pre, g.rows, g.co),
                     reshaped(out, g.rows, g.co), act.code, act.p0, act.p1, act.p2, dz2)
    splits = math.ceil(g.rows / SPLIT_ROWS)
    if grad_kernel is not None:
        if not accumulate_kernel:
            _fill(grad_kernel, 0.0)
        launch_tiled(_grad_kernel_kernel, g.depth, g.co, TILE, x, dz2, g.kw, g.sh, g.sw, g.pt, g.pl, g.oh, g.ow,
                     SPLIT_ROWS, reshaped(grad_kernel, g.depth, g.co), batch=splits)
    if grad_bias is not None:
        if not accumulate_bias:
            _fill(grad_bias, 0.0)
        launch_blocks(_bias_grad_kernel, (math.ceil(g.co / (TILE * TILE)), splits), dz2, SPLIT_ROWS, grad_bias,
                      threads=TILE * TILE)
    if grad_x is not None:
        launch_tiled(_grad_input_kernel, g.n * g.h * g.w, g.c, TILE, dz2, kernel, g.sh, g.sw, g.pt, g.pl, g.oh,
                     g.ow, accumulate_x, grad_x)
