"""2-D convolution kernels (NHWC input, Keras kernel layout (KH, KW, C_in, C_out)), forward and backward,
with the bias and an elementwise activation fused in.

CPU variants work in chunks of output lines (image rows over the batch) sized to stay in the core's L2
cache, with the algorithm chosen per shape by `choose_cpu_algorithm`:

- "gemm": im2col of a chunk (Numba) then one BLAS sgemm per chunk through NumPy (forward cols @ W,
  grad kernel cols^T @ dZ, grad input col2im(dZ @ W^T)).
- "direct": a Numba loop with the output-channel loop innermost, for the 3x3 single-channel forward.

The activation (any `kernels.activations` activation) is applied to each chunk while it is in cache;
bias + ReLU, the hot case, is one fused Numba pass. Activations whose gradient needs the pre-activation
(gelu, silu, ...) keep it in a caller-provided `pre_activation` buffer (`needs_pre_activation`). CUDA variants live in `_conv_cuda.py` (imported on first use so
CPU-only processes never load numba.cuda).

All functions write into caller-provided arrays. Scratch buffers (im2col chunks) are cached per thread,
since shards of the same op run concurrently on several CPU processors.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from kernels import _conv_cpu as _cpu
from kernels import _conv_winograd as _wg
from kernels import activations as _acts
from kernels._conv_geometry import check_padding, pair, window_geometry
from kernels._conv_reference import conv2d_backward_reference, conv2d_reference

__all__ = [
    "ConvGeometry", "choose_cpu_algorithm", "conv_geometry", "fused_activation", "needs_pre_activation",
    "conv2d_forward_cpu", "conv2d_backward_cpu", "conv2d_forward_cuda", "conv2d_backward_cuda",
    "conv2d_reference", "conv2d_backward_reference",
]

_LINEAR = _acts.resolve_activation("linear")
_RELU = _acts.resolve_activation("relu")

# Bytes of one im2col chunk; measured best between 256 KiB and 2 MiB (L2 is 512 KiB-1 MiB per core here),
# below that the per-chunk BLAS call overhead shows.
CHUNK_BYTES = 1 << 20
# Winograd: tiles per transform+GEMM chunk, samples per backward chunk (whose dZ is formed once), and the
# channel counts from which it beats im2col + sgemm (all measured, see choose_cpu_algorithm). Chunks of
# 288-1152 tiles were equally fast on MNIST's conv2 (32 samples: forward 7.4-7.7 ms, backward 16.7-17.1
# ms); 36-144 tiles were 5-40% slower (per-call overheads and small GEMMs), L2-sized or not.
WINOGRAD_TILES = 576
WINOGRAD_SAMPLES = 2
WINOGRAD_MIN_CHANNELS = 32

_tls = threading.local()


class ConvGeometry(NamedTuple):
    """Every size of one convolution call."""

    n: int
    h: int
    w: int
    c: int
    kh: int
    kw: int
    co: int
    sh: int
    sw: int
    oh: int
    ow: int
    pt: int
    pl: int

    @property
    def rows(self) -> int:
        """Rows of the implicit-GEMM matrix: output pixels over the batch."""
        return self.n * self.oh * self.ow

    @property
    def depth(self) -> int:
        """The GEMM's reduction length: taps per output pixel."""
        return self.kh * self.kw * self.c


def conv_geometry(x_shape, kernel_shape, strides=(1, 1), padding="valid", who="conv2d") -> ConvGeometry:
    """Validate shapes and arguments and return the call's sizes.

    Raises:
        ValueError: naming `who`, when a shape or argument is invalid.
    """
    if len(x_shape) != 4:
        raise ValueError(f"{who} expects an NHWC input of rank 4, received shape {tuple(x_shape)}.")
    if len(kernel_shape) != 4:
        raise ValueError(f"{who} expects a kernel of shape (kh, kw, in_channels, out_channels), received "
                         f"shape {tuple(kernel_shape)}.")
    n, h, w, c = (int(s) for s in x_shape)
    kh, kw, kc, co = (int(s) for s in kernel_shape)
    if kc != c:
        raise ValueError(f"{who}: the input has {c} channels (shape {tuple(x_shape)}) but the kernel expects "
                         f"{kc} (kernel shape {tuple(kernel_shape)}).")
    sh, sw = pair(strides, who, "strides")
    padding = check_padding(padding, who)
    oh, ow, pt, _, pl, _ = window_geometry(h, w, (kh, kw), (sh, sw), padding)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{who}: a {kh}x{kw} kernel does not fit the {h}x{w} input with padding='valid'; "
                         f"use padding='same' or a larger input.")
    return ConvGeometry(n, h, w, c, kh, kw, co, sh, sw, oh, ow, pt, pl)


def choose_cpu_algorithm(g: ConvGeometry, pass_: str = "forward") -> str:
    """The CPU algorithm for the "forward" or the "backward" (both gradients) of a convolution.

    Rule, from single-threaded measurements on the 2-core EPYC Zen3 (AVX2, OpenBLAS Haswell sgemm at
    ~89 GFLOP/s on one core), 32-sample shards (benchmarks/conv_kernels.py --algorithms prints them):

    - "direct" for the forward of a 3x3 kernel over a single input channel (MNIST's first layer:
      0.34 ms vs 0.69 ms for im2col + sgemm): the nine taps stay in registers.
    - "winograd" (F(2x2, 3x3)) for stride-1 3x3 kernels with at least WINOGRAD_MIN_CHANNELS input and
      output channels: 2.25x fewer multiplies in 16 batched GEMMs, but the tile transforms cost time
      linear in the channels, so it wins only for wide layers. Measured ms (forward / backward, 28x28
      valid unless noted): 32->64 on 26x26 (MNIST conv2) gemm 9.45 / 19.65, winograd 7.96 / 16.94;
      32->32 7.10 / 14.02 vs 6.15 / 12.74; 64->64 on 14x14 4.88 / 10.16 vs 3.85 / 8.97; 128->128 on
      14x14 17.2 / 36.7 vs 11.1 / 27.1; but 16->16 2.63 / 5.89 vs 3.26 / 7.46, 16->32 3.95 / 8.21 vs
      4.33 / 9.98, 8->8 and 3->32 about 2x slower; 32->16 and 24->48 within 5% (left to gemm).
    - "gemm" (im2col + sgemm) for everything else. Direct loop nests with the output-channel loop
      innermost were slower than im2col + sgemm for every other shape measured, forward and backward:
      2.5x (C_in=1, grad input) to 6x (C_in=32 -> 64, grad input), 1.2x for the single-channel grad
      kernel (1.27 vs 1.09 ms); BLAS runs at ~90% of peak on chunks that stay in L2 and im2col costs
      ~10% of the GEMM.
    """
    if (g.kh, g.kw, g.sh, g.sw) == (3, 3, 1, 1) and min(g.c, g.co) >= WINOGRAD_MIN_CHANNELS:
        return "winograd"
    if pass_ == "forward" and g.kh == 3 and g.kw == 3 and g.c == 1:
        return "direct"
    return "gemm"


def _check_algorithm(g: ConvGeometry, algorithm: str, pass_: str, who: str) -> str:
    if algorithm == "auto":
        return choose_cpu_algorithm(g, pass_)
    ok = {"gemm": True,
          "direct": pass_ == "forward" and (g.kh, g.kw, g.c) == (3, 3, 1),
          "winograd": (g.kh, g.kw, g.sh, g.sw) == (3, 3, 1, 1)}
    if not ok.get(algorithm, False):
        raise ValueError(f"{who}: algorithm={algorithm!r} does not apply to a {g.kh}x{g.kw} kernel over "
                         f"{g.c} channels with strides ({g.sh}, {g.sw}) ('direct': 3x3 single-channel "
                         f"forward; 'winograd': 3x3 stride 1); use 'auto' or 'gemm'.")
    return algorithm


def _workspace(name: str, shape, dtype) -> np.ndarray:
    """A per-thread scratch array of `shape`, reused across calls."""
    cache = getattr(_tls, "buffers", None)
    if cache is None:
        cache = _tls.buffers = {}
    size = int(np.prod(shape))
    dtype = np.dtype(dtype)
    buf = cache.get((name, dtype))
    if buf is None or buf.size < size:
        buf = cache[(name, dtype)] = np.empty(max(size, 1), dtype)
    return buf[:size].reshape(shape)


def _chunk_lines(g: ConvGeometry, itemsize: int) -> int:
    """Output lines (image rows over N*OH) per chunk so that one im2col chunk is about CHUNK_BYTES."""
    return max(1, CHUNK_BYTES // (g.ow * g.depth * itemsize))


def _check_out(name: str, arr, shape, dtype, who: str) -> None:
    if arr is None:
        return
    if tuple(arr.shape) != tuple(shape):
        raise ValueError(f"{who}: {name} must have shape {tuple(shape)}, received {tuple(arr.shape)}.")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{who}: {name} must be a C-contiguous array (it is written through a reshaped "
                         f"view); pass np.ascontiguousarray(...) or a fresh buffer.")
    if arr.dtype != dtype:
        raise ValueError(f"{who}: {name} must have dtype {dtype}, received {arr.dtype}.")


def fused_activation(activation) -> _acts.Activation:
    """The `kernels.activations.Activation` for `activation` (None, a name, or an Activation)."""
    if activation is None:
        return _LINEAR
    return activation if isinstance(activation, _acts.Activation) else _acts.resolve_activation(activation)


def needs_pre_activation(activation) -> bool:
    """Whether the backward needs the pre-activation z (gelu, silu, ...): then the forward must be given
    a `pre_activation` buffer to keep it. Activations whose gradient follows from the output (relu,
    sigmoid, tanh, elu, ...) need none."""
    return not _acts.grad_from_output(fused_activation(activation))


def _check_pre(pre, act, shape, dtype, who: str):
    if pre is None:
        if not _acts.grad_from_output(act):
            raise ValueError(f"{who}: the gradient of activation {act} needs the pre-activation; pass a "
                             f"pre_activation buffer of shape {tuple(shape)} (see needs_pre_activation).")
        return None
    _check_out("pre_activation", pre, shape, dtype, who)
    return pre.reshape(-1, shape[-1])


def _epilogue(rows, b, has_bias, act, pre_rows) -> None:
    """rows = act(rows + bias) in place on a chunk still in cache; pre_rows (if given) keeps rows + bias."""
    relu = act == _RELU and pre_rows is None
    if has_bias or relu:
        _cpu.bias_relu_rows(rows, b, has_bias, relu)
    if pre_rows is not None:
        np.copyto(pre_rows, rows)
    if not relu and act.code != _acts.LINEAR:
        _acts.activation_forward_cpu(rows, rows, act)


def conv2d_forward_cpu(x, kernel, bias, out, strides=(1, 1), padding="valid", activation=None,
                       pre_activation=None, algorithm: str = "auto") -> None:
    """out = activation(conv2d(x, kernel) + bias) on the CPU.

    Args:
        x: (N, H, W, C_in) input.
        kernel: (KH, KW, C_in, C_out) weights.
        bias: (C_out,) or None.
        out: (N, OH, OW, C_out) C-contiguous output of x's dtype, written.
        strides: int or pair.
        padding: "valid" or "same" (TensorFlow's split: the odd pixel at the bottom/right).
        activation: None, a `kernels.activations` name, or an Activation.
        pre_activation: buffer shaped like `out` receiving conv + bias before the activation; required
            when `needs_pre_activation(activation)`, else optional.
        algorithm: "auto" (see `choose_cpu_algorithm`), "gemm" or "direct" (3x3 single-channel only).
    """
    who = "conv2d_forward_cpu"
    g = conv_geometry(x.shape, kernel.shape, strides, padding, who)
    act = fused_activation(activation)
    x = np.ascontiguousarray(x)
    kernel = np.ascontiguousarray(kernel, dtype=x.dtype)
    oshape = (g.n, g.oh, g.ow, g.co)
    _check_out("out", out, oshape, x.dtype, who)
    pre2 = _check_pre(pre_activation, act, oshape, x.dtype, who)
    has_bias = bias is not None
    b = np.ascontiguousarray(bias, dtype=x.dtype) if has_bias else _workspace("nobias", (g.co,), x.dtype)
    out2 = out.reshape(g.rows, g.co)
    algo = _check_algorithm(g, algorithm, "forward", who)
    if algo == "direct":
        relu = act == _RELU and pre2 is None
        if not has_bias:
            b[:] = 0.0
        _cpu.direct3x3c1_forward(x, kernel, b, relu, g.sh, g.sw, g.pt, g.pl, out)
        _epilogue(out2, b, False, _LINEAR if relu else act, pre2)
        return
    if algo == "winograd":
        _winograd_forward(g, x, kernel, b, has_bias, act, out, pre2)
        return
    lines = g.n * g.oh
    step = _chunk_lines(g, x.itemsize)
    x3 = x.reshape(g.n, g.h, g.w * g.c)
    w2 = kernel.reshape(g.depth, g.co)
    cols = _workspace("cols", (min(step, lines) * g.ow, g.kh, g.kw * g.c), x.dtype)
    for l0 in range(0, lines, step):
        l1 = min(l0 + step, lines)
        r0, r1 = l0 * g.ow, l1 * g.ow
        chunk = cols[:r1 - r0]
        _cpu.im2col_lines(x3, l0, l1, g.sh, g.sw, g.pt, g.pl, g.oh, g.ow, g.c, chunk)
        rows = out2[r0:r1]
        np.matmul(chunk.reshape(r1 - r0, g.depth), w2, out=rows)
        _epilogue(rows, b, has_bias, act, None if pre2 is None else pre2[r0:r1])


def conv2d_backward_cpu(x, kernel, out, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                        strides=(1, 1), padding="valid", activation=None, pre_activation=None,
                        accumulate_x=False, accumulate_kernel=False, accumulate_bias=False,
                        algorithm: str = "auto") -> None:
    """Gradients of `conv2d_forward_cpu` on the CPU.

    Args:
        x, kernel: the forward inputs.
        out: the forward output (after the activation; read only when the activation is not linear).
        grad_out: (N, OH, OW, C_out) gradient of the loss with respect to `out`.
        grad_x, grad_kernel, grad_bias: buffers to write, or None where no gradient is wanted.
        strides, padding, activation: as for the forward call.
        pre_activation: the forward's pre-activation buffer (required when needs_pre_activation).
        accumulate_x, accumulate_kernel, accumulate_bias: add into the buffer (True) or overwrite it.
        algorithm: "auto" (see `choose_cpu_algorithm`), "gemm" or "winograd" (3x3 stride 1 only).
    """
    who = "conv2d_backward_cpu"
    g = conv_geometry(x.shape, kernel.shape, strides, padding, who)
    act = fused_activation(activation)
    dt = np.asarray(x).dtype
    x = np.ascontiguousarray(x)
    kernel = np.ascontiguousarray(kernel, dtype=dt)
    grad_out = np.ascontiguousarray(grad_out, dtype=dt)
    oshape = (g.n, g.oh, g.ow, g.co)
    if grad_out.shape != oshape:
        raise ValueError(f"{who}: grad_out must have shape {oshape}, received {grad_out.shape}.")
    _check_out("grad_x", grad_x, x.shape, dt, who)
    _check_out("grad_kernel", grad_kernel, kernel.shape, dt, who)
    _check_out("grad_bias", grad_bias, (g.co,), dt, who)
    dy2 = grad_out.reshape(g.rows, g.co)
    y2 = z2 = None
    if act.code != _acts.LINEAR:
        out = np.ascontiguousarray(out, dtype=dt)
        if out.shape != oshape:
            raise ValueError(f"{who}: out (the forward output) must have shape {oshape}, received "
                             f"{out.shape}.")
        y2 = out.reshape(g.rows, g.co)
        z2 = y2 if _acts.grad_from_output(act) else _check_pre(pre_activation, act, oshape, dt, who)
    want_db = grad_bias is not None
    db = _workspace("dbias", (g.co,), np.float64)
    db[:] = 0.0
    algo = _check_algorithm(g, algorithm, "backward", who)
    if algo == "winograd" and (grad_x is not None or grad_kernel is not None):
        _winograd_backward(g, x, kernel, dy2, y2, z2, act, grad_x, grad_kernel, accumulate_x, accumulate_kernel,
                           db, want_db)
    else:
        if grad_x is not None and not accumulate_x:
            grad_x[...] = 0.0
        gk2 = None
        if grad_kernel is not None:
            gk2 = grad_kernel.reshape(g.depth, g.co)
            if not accumulate_kernel:
                gk2[...] = 0.0
        _gemm_backward(g, x, kernel, dy2, y2, z2, act, grad_x, gk2, db, want_db)
    if want_db:
        if accumulate_bias:
            grad_bias += db.astype(dt)
        else:
            grad_bias[...] = db


def _dz_rows(dy2, y2, z2, act, r0, r1, buf, db, want_db):
    """The gradient before the activation for output rows r0..r1 (a view of dy2 when linear)."""
    if y2 is None:
        dz = dy2[r0:r1]
        if want_db:
            _cpu.colsum_rows(dz, db)
        return dz
    dz = buf[:r1 - r0]
    if act == _RELU:
        _cpu.relu_grad_rows(dy2[r0:r1], y2[r0:r1], dz, db, want_db)
    else:
        _acts.activation_backward_cpu(z2[r0:r1], y2[r0:r1], dy2[r0:r1], dz, act)
        if want_db:
            _cpu.colsum_rows(dz, db)
    return dz


def _gemm_backward(g, x, kernel, dy2, y2, z2, act, grad_x, gk2, db, want_db) -> None:
    dt = x.dtype
    lines = g.n * g.oh
    step = _chunk_lines(g, dt.itemsize)
    x3 = x.reshape(g.n, g.h, g.w * g.c)
    w2 = kernel.reshape(g.depth, g.co)
    geo = (g.sh, g.sw, g.pt, g.pl, g.oh, g.ow)
    cols = dk_tmp = dz_buf = None
    if gk2 is not None or grad_x is not None:
        cols = _workspace("cols", (min(step, lines) * g.ow, g.kh, g.kw * g.c), dt)
        dk_tmp = _workspace("dkernel", (g.depth, g.co), dt)
    if y2 is not None:
        dz_buf = _workspace("dz", (min(step, lines) * g.ow, g.co), dt)
    for l0 in range(0, lines, step):
        l1 = min(l0 + step, lines)
        r0, r1 = l0 * g.ow, l1 * g.ow
        dz = _dz_rows(dy2, y2, z2, act, r0, r1, dz_buf, db, want_db)
        if cols is None:
            continue
        chunk = cols[:r1 - r0]
        if gk2 is not None:
            _cpu.im2col_lines(x3, l0, l1, *geo, g.c, chunk)
            np.matmul(chunk.reshape(r1 - r0, g.depth).T, dz, out=dk_tmp)
            gk2 += dk_tmp
        if grad_x is not None:
            np.matmul(dz, w2.T, out=chunk.reshape(r1 - r0, g.depth))
            _cpu.col2im_add_lines(chunk.reshape(r1 - r0, g.kh, g.kw, g.c), l0, l1, *geo, grad_x)


def _winograd_scratch(width: int, tiles_w: int, c_in: int, c_out: int, dt, tag: str):
    """(zero, rows, s) scratch of the Winograd transforms: a zero image row of the input, the strip of
    transformed rows, and the output transform's strip."""
    zero = _workspace("wg_zero" + tag, (width, c_in), dt)
    zero[...] = 0.0
    return (zero, _workspace("wg_eo" + tag, (4, 2, tiles_w + 1, c_in), dt),
            _workspace("wg_s" + tag, (2, 4, tiles_w, c_out), dt))


def _winograd_forward(g: ConvGeometry, x, kernel, b, has_bias, act, out, pre2) -> None:
    dt = x.dtype
    th, tw = (g.oh + 1) // 2, (g.ow + 1) // 2
    u = _wg.filter_transform(kernel)
    zero, eo, s = _winograd_scratch(g.w, tw, g.c, g.co, dt, "")
    relu = act == _RELU and pre2 is None
    out2 = out.reshape(g.rows, g.co)
    lines = g.n * th
    step = max(1, WINOGRAD_TILES // tw)
    for l0 in range(0, lines, step):
        l1 = min(l0 + step, lines)
        t = (l1 - l0) * tw
        v = _workspace("wg_v", (16, t, g.c), dt)
        m = _workspace("wg_m", (16, t, g.co), dt)
        _wg.input_transform(x, l0, l1, g.pt, g.pl, th, tw, zero, eo, v)
        np.matmul(v, u, out=m)
        _wg.output_transform(m, l0, l1, th, tw, b, has_bias, relu, False, s, out)
        if not relu and (pre2 is not None or act.code != _acts.LINEAR):
            r0 = ((l0 // th) * g.oh + 2 * (l0 % th)) * g.ow  # the output rows of tile rows l0..l1
            r1 = ((l1 - 1) // th * g.oh + min(2 * ((l1 - 1) % th) + 2, g.oh)) * g.ow
            _epilogue(out2[r0:r1], b, False, act, None if pre2 is None else pre2[r0:r1])


def _winograd_backward(g, x, kernel, dy2, y2, z2, act, grad_x, grad_kernel, accumulate_x, accumulate_kernel,
                       db, want_db) -> None:
    """Per chunk of WINOGRAD_SAMPLES samples: dZ once, then the grad-kernel and grad-input transforms and
    GEMMs in sub-chunks of at most about WINOGRAD_TILES tiles."""
    dt = x.dtype
    th, tw = (g.oh + 1) // 2, (g.ow + 1) // 2  # output tiles (grad kernel)
    ih, iw = (g.h + 1) // 2, (g.w + 1) // 2  # input tiles (grad input)
    per = g.oh * g.ow
    ns = WINOGRAD_SAMPLES
    dz_buf = _workspace("dz", (ns * per, g.co), dt) if y2 is not None else None
    if grad_kernel is not None:
        zero, eo, _ = _winograd_scratch(g.w, tw, g.c, g.co, dt, "")
        zeo = _workspace("wg_zeo", (4, 2, tw, g.co), dt)
        du = _workspace("wg_du", (16, g.c, g.co), dt)
        du_tmp = _workspace("wg_du_tmp", (16, g.c, g.co), dt)
        du[...] = 0.0
    if grad_x is not None:
        u_flip = _wg.filter_transform(kernel, flip=True)
        dzero, deo, ds = _winograd_scratch(g.ow, iw, g.co, g.c, dt, "_dx")
    for n0 in range(0, g.n, ns):
        n1 = min(n0 + ns, g.n)
        dz = _dz_rows(dy2, y2, z2, act, n0 * per, n1 * per, dz_buf, db, want_db)
        dz4 = dz.reshape(n1 - n0, g.oh, g.ow, g.co)
        xs = x[n0:n1]
        if grad_kernel is not None:
            lines, step = (n1 - n0) * th, max(1, WINOGRAD_TILES // tw)
            for l0 in range(0, lines, step):
                l1 = min(l0 + step, lines)
                v = _workspace("wg_v", (16, (l1 - l0) * tw, g.c), dt)
                z = _workspace("wg_m", (16, (l1 - l0) * tw, g.co), dt)
                _wg.input_transform(xs, l0, l1, g.pt, g.pl, th, tw, zero, eo, v)
                _wg.grad_transform(dz4, l0, l1, th, tw, zeo, z)
                np.matmul(v.transpose(0, 2, 1), z, out=du_tmp)
                du += du_tmp
        if grad_x is not None:
            gxs = grad_x[n0:n1]
            lines, step = (n1 - n0) * ih, max(1, WINOGRAD_TILES // iw)
            for l0 in range(0, lines, step):
                l1 = min(l0 + step, lines)
                v = _workspace("wg_v", (16, (l1 - l0) * iw, g.co), dt)
                m = _workspace("wg_m", (16, (l1 - l0) * iw, g.c), dt)
                _wg.input_transform(dz4, l0, l1, 2 - g.pt, 2 - g.pl, ih, iw, dzero, deo, v)
                np.matmul(v, u_flip, out=m)
                _wg.output_transform(m, l0, l1, ih, iw, u_flip[0, 0], False, False, accumulate_x, ds, gxs)
    if grad_kernel is not None:
        dk = _wg.kernel_from_transform(du)
        if accumulate_kernel:
            grad_kernel += dk.astype(dt)
        else:
            grad_kernel[...] = dk


def conv2d_forward_cuda(x, kernel, bias, out, strides=(1, 1), padding="valid", activation=None,
                        pre_activation=None) -> None:
    """The CUDA variant of `conv2d_forward_cpu` on numba float32 device arrays (same arguments)."""
    from kernels import _conv_cuda

    who = "conv2d_forward_cuda"
    g = conv_geometry(x.shape, kernel.shape, strides, padding, who)
    act = fused_activation(activation)
    if pre_activation is None and not _acts.grad_from_output(act):
        raise ValueError(f"{who}: the gradient of activation {act} needs the pre-activation; pass a "
                         f"pre_activation buffer shaped like out.")
    _conv_cuda.forward(g, x, kernel, bias, out, act, pre_activation)


def conv2d_backward_cuda(x, kernel, out, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                         strides=(1, 1), padding="valid", activation=None, pre_activation=None,
                         accumulate_x=False, accumulate_kernel=False, accumulate_bias=False) -> None:
    """The CUDA variant of `conv2d_backward_cpu` on numba float32 device arrays (same arguments)."""
    from kernels import _conv_cuda

    who = "conv2d_backward_cuda"
    g = conv_geometry(x.shape, kernel.shape, strides, padding, who)
    act = fused_activation(activation)
    pre = out if _acts.grad_from_output(act) else pre_activation
    if pre is None:
        raise ValueError(f"{who}: the gradient of activation {act} needs the forward's pre_activation buffer.")
    _conv_cuda.backward(g, x, kernel, out, pre, grad_out, grad_x, grad_kernel, grad_bias, act, accumulate_x,
                        accumulate_kernel, accumulate_bias)
