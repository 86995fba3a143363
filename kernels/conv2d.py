"""2-D convolution kernels (NHWC input, Keras kernel layout (KH, KW, C_in, C_out)), forward and backward,
with the bias and an elementwise activation fused in.

CPU variants work in chunks of output lines (image rows over the batch) sized to stay in the core's L2
cache, with the algorithm chosen per shape by `_conv_choice.choose_cpu_algorithm`:

- "gemm": im2col of a chunk (Numba) then one sgemm per chunk (forward cols @ W, grad kernel cols^T @ dZ,
  grad input col2im(dZ @ W^T)).
- "direct": a Numba loop with the output-channel loop innermost, for the 3x3 single-channel forward.
- "winograd4": F(4x4, 3x3) for stride-1 3x3 kernels with enough output pixels (`_conv_winograd4`);
  "winograd", F(2x2, 3x3) (`_conv_winograd`), runs only when asked for by name.

Padding is "valid", "same" (TensorFlow's split) or explicit ((top, bottom), (left, right)) pads
(`_conv_geometry`): every path works from the top/left offsets and the output size only, reading zeros
outside the input, so a spatial tile of a convolution runs on its halo'd input slice with its local pads
and its grad input is zero on rows/columns no window reads, exactly like the whole-array call.

The activation (any `kernels.activations` activation) is applied to each chunk while it is in cache;
bias + ReLU, the hot case, is one fused Numba pass. Activations whose gradient needs the pre-activation
(gelu, silu, ...) keep it in a caller-provided `pre_activation` buffer (`needs_pre_activation`). CUDA
variants live in `_conv_cuda.py` (imported on first use so CPU-only processes never load numba.cuda).

All functions write into caller-provided arrays. Scratch buffers (im2col chunks) are cached per thread,
since shards of the same op run concurrently on several CPU processors. With bias + ReLU or no activation
a whole forward or backward is one `nogil` Numba call, GEMMs included: returning to Python between chunks
cost 20-30% in training, where other threads hold the GIL. The GEMMs of both "gemm" and "winograd" run on
the register-blocked AVX-512 micro-kernels of `_conv_simd` when the host has AVX-512 (about twice the
speed of OpenBLAS's AVX2 kernels, which NumPy's OpenBLAS uses when OPENBLAS_CORETYPE=Haswell), float32 and
a column count that is a multiple of 16; otherwise NumPy's BLAS (`_conv_blas`).
"""

from __future__ import annotations

import threading

import numpy as np

from kernels import _conv_cpu as _cpu
from kernels import _conv_phase as _phase
from kernels import _conv_simd as _simd
from kernels import _conv_taps as _taps
from kernels import _conv_winograd as _wg
from kernels import _conv_winograd4 as _wg4
from kernels import activation_loops as _act_loops
from kernels import activations as _acts
from kernels._conv_choice import (  # noqa: F401  (their home; callers read them from here too)
    PHASE_DX_MIN_CHANNELS,
    PHASE_DX_STRIDE1_RATIO,
    WINOGRAD4_MIN_CHANNELS,
    WINOGRAD4_MIN_SIZE,
    WINOGRAD_MIN_PIXELS,
    ConvGeometry,
    check_algorithm,
    check_shapes,
    choose_cpu_algorithm,
    choose_dx_algorithm,
    conv_geometry,
)

__all__ = [
    "ConvGeometry", "choose_cpu_algorithm", "conv_geometry", "fused_activation", "needs_pre_activation",
    "conv2d_forward_cpu", "conv2d_backward_cpu", "conv2d_forward_cuda", "conv2d_backward_cuda",
]

_LINEAR = _acts.resolve_activation("linear")
_RELU = _acts.resolve_activation("relu")

# Bytes of one im2col chunk; measured best between 256 KiB and 2 MiB (L2 is 512 KiB-1 MiB per core here),
# below that the per-chunk BLAS call overhead shows.
CHUNK_BYTES = 1 << 20
# ... but where that is under SHORT_CHUNK_ROWS output pixels (a deep im2col: KH*KW*C_in in the thousands),
# the forward takes MIN_CHUNK_ROWS: each chunk's GEMM streams the whole kernel matrix. DCGAN's 4x4 stride-2
# conv 64x64x512 -> 32x32x256 (depth 8192: 32 pixels a chunk), one thread, 32 samples, ms (alternating,
# loaded machine): 32 pixels 1222, 1226 / 1524, 1119; 256 pixels 1012, 995 / 1283, 923. Not below: 16x16x128
# -> 8x8x128 (128 pixels a chunk) went 7.3 -> 7.8 with 256 (five rounds). The backward stays on CHUNK_BYTES:
# 256 pixels made its kernel gradient slower (that layer 1306-1315 -> 1594-1655 ms, 32x32x256 -> 16x16x128
# 69 -> 99-107).
SHORT_CHUNK_ROWS = 64
MIN_CHUNK_ROWS = 256
# Winograd F(2x2, 3x3) (algorithm="winograd" only): tiles per transform+GEMM chunk and samples per
# backward chunk (whose dZ is formed once). Chunks of
# 288-1152 tiles were equally fast on MNIST's conv2 (32 samples: forward 7.4-7.7 ms, backward 16.7-17.1
# ms); 36-144 tiles were 5-40% slower (per-call overheads and small GEMMs), L2-sized or not.
WINOGRAD_TILES = 576
WINOGRAD_SAMPLES = 2
# F(4x4, 3x3): tiles per chunk (72-288 measured within 5% on MNIST's conv2); where it is chosen:
# `_conv_choice.choose_cpu_algorithm`.
WINOGRAD4_TILES = 144
# F(4x4, 3x3) backward: tiles per chunk, whose Z (36 x tiles x C_out) feeds both gradients. Measured on
# MNIST's conv2 (32 samples, one thread, ms for all three gradients, one sweep): 12 tiles 5.83, 24 5.36,
# 36 5.20, 48 5.25, 72 5.37, 96 5.38, 144 5.89 (Z, V and the strips outgrow the 2 MB L2 cache).
WINOGRAD4_BACKWARD_TILES = 48

# The im2col kernel gradient (`_conv_cpu.gemm_backward`) sums at least this many output pixels' products in
# float32, then adds that partial sum to a float64 total. Summed over the whole batch in float32, 64 samples
# of 32x32x64 -> 128 5x5 "same" (512 chunks of 128 pixels) had 8.5e-7 of the largest magnitude for error,
# 2.1e-7 folded. A fold adds each of the KH*KW*C_in*C_out values once per 2048 or more FMAs into it.
DK_FOLD_ROWS = 2048

# Chunks of the phase-gather input gradient (`_conv_choice.choose_dx_algorithm`): about this many bytes of
# gathered dZ plus GEMM result.
PHASE_CHUNK_BYTES = 1 << 20

_tls = threading.local()
# algorithm -> (its module, its output tile size m): F(m x m, 3x3); both modules take the same arguments
_WINOGRAD = {"winograd": (_wg, 2), "winograd4": (_wg4, 4)}


_generation = [0]  # bumped by release_workspaces: each thread drops its scratch arrays at its next call


def release_workspaces() -> None:
    """Let every thread's scratch arrays go (each thread drops them at its next convolution): they are
    sized for the largest piece the thread ever computed, which after a strategy search is often a
    candidate's piece that the chosen strategy never runs."""
    _generation[0] += 1


def _workspace(name: str, shape, dtype) -> np.ndarray:
    """A per-thread scratch array of `shape`, reused across calls (until `release_workspaces`)."""
    cache = getattr(_tls, "buffers", None)
    if cache is None or _tls.generation != _generation[0]:
        cache = _tls.buffers = {}
        _tls.generation = _generation[0]
    size = int(np.prod(shape))
    dtype = np.dtype(dtype)
    buf = cache.get((name, dtype))
    if buf is None or buf.size < size:
        buf = cache[(name, dtype)] = np.empty(max(size, 1), dtype)
    return buf[:size].reshape(shape)


def _chunk_lines(g: ConvGeometry, itemsize: int, extra: int = 0, min_rows: int = 1) -> int:
    """Output lines (image rows over N*OH) per chunk so that one im2col chunk, with `extra` more values
    per output pixel (the backward's dZ chunk: C_out), is about CHUNK_BYTES; `min_rows` output pixels
    where that chunk would hold fewer than SHORT_CHUNK_ROWS."""
    lines = max(1, CHUNK_BYTES // (g.ow * (g.depth + extra) * itemsize))
    return lines if lines * g.ow >= SHORT_CHUNK_ROWS else max(lines, -(-min_rows // g.ow))


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


def _finish_activation(out2, act, pre2) -> None:
    """After a linear (+ bias) kernel: keep the pre-activation if asked, then apply a non-ReLU activation."""
    if pre2 is not None:
        np.copyto(pre2, out2)
    if act.code != _acts.LINEAR:
        _act_loops.activation_forward_cpu(out2, out2, act)


def conv2d_forward_cpu(x, kernel, bias, out, strides=(1, 1), padding="valid", activation=None,
                       pre_activation=None, algorithm: str = "auto") -> None:
    """out = activation(conv2d(x, kernel) + bias) on the CPU, as one nogil Numba call for bias + ReLU.

    Args:
        x: (N, H, W, C_in) input.
        kernel: (KH, KW, C_in, C_out) weights.
        bias: (C_out,) or None.
        out: (N, OH, OW, C_out) C-contiguous output of x's dtype, written.
        strides: int or pair.
        padding: "valid", "same" (TensorFlow's split: the odd pixel at the bottom/right) or explicit
            ((top, bottom), (left, right)) non-negative pads: out rows (H + top + bottom - KH) // SH + 1,
            output row i reads input row i*SH + a - top (zero outside [0, H)). A spatial tile of a
            larger convolution passes its halo'd input slice and its local pads.
        activation: None, a `kernels.activations` name, or an Activation.
        pre_activation: buffer shaped like `out` receiving conv + bias before the activation; required
            when `needs_pre_activation(activation)`, else optional.
        algorithm: "auto" (see `choose_cpu_algorithm`), "gemm", "direct" (3x3 single-channel only),
            "winograd" or "winograd4" (3x3 stride 1 only).
    """
    who = "conv2d_forward_cpu"
    g = conv_geometry(x.shape, kernel.shape, strides, padding, who)
    act = fused_activation(activation)
    x = np.ascontiguousarray(x)
    dt = x.dtype
    kernel = np.ascontiguousarray(kernel, dtype=dt)
    oshape = (g.n, g.oh, g.ow, g.co)
    _check_out("out", out, oshape, dt, who)
    pre2 = _check_pre(pre_activation, act, oshape, dt, who)
    has_bias = bias is not None
    b = np.ascontiguousarray(bias, dtype=dt) if has_bias else _workspace("nobias", (g.co,), dt)
    if not has_bias:
        b[:] = 0.0
    relu = act == _RELU and pre2 is None  # fused into the kernel; any other activation runs after it
    out2 = out.reshape(g.rows, g.co)
    algo = check_algorithm(g, algorithm, "forward", who)
    if algo == "direct":
        _cpu.direct3x3c1_forward(x, kernel, b, relu, g.sh, g.sw, g.pt, g.pl, out)
    elif algo in _WINOGRAD:
        wg, m = _WINOGRAD[algo]
        th, tw = -(-g.oh // m), -(-g.ow // m)  # output tiles per column / row
        step = max(1, _winograd_tiles(algo) // tw)
        points = (m + 2) ** 2
        zero, strip, s = _winograd_scratch(m, g.w, tw, g.c, g.co, dt, "")
        wg.forward(x, wg.filter_transform(kernel), b, has_bias, relu, g.pt, g.pl, th, tw, step, zero, strip, s,
                   _workspace(f"wg{m}_v", (points * step * tw * g.c,), dt),
                   _workspace(f"wg{m}_m", (points * step * tw * g.co,), dt), _simd.flag(), out)
        if has_bias and not b.all():  # a bias of exactly 0 (Keras' initial one): its zeros must stay exact
            _exact_zero_fields(x, g, b, relu, out)
    elif _taps.use_taps(g, "forward"):  # few output channels: tap products, no im2col
        _taps.forward(g, x, kernel, b, _simd.flag(), _workspace, out)
        if relu:
            _cpu.bias_relu_rows(out2, b, False, True)
    else:
        step = _chunk_lines(g, dt.itemsize, min_rows=MIN_CHUNK_ROWS)
        cols = _workspace("cols", (min(step, g.n * g.oh) * g.ow, g.kh, g.kw * g.c), dt)
        _cpu.gemm_forward(x.reshape(g.n, g.h, g.w * g.c), kernel.reshape(g.depth, g.co), b, has_bias, relu,
                          g.sh, g.sw, g.pt, g.pl, g.oh, g.ow, g.c, g.kh, step, cols, _simd.flag(), out2)
    if not relu:
        _finish_activation(out2, act, pre2)


def conv2d_backward_cpu(x, kernel, out, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                        strides=(1, 1), padding="valid", activation=None, pre_activation=None,
                        accumulate_x=False, accumulate_kernel=False, accumulate_bias=False,
                        algorithm: str = "auto") -> None:
    """Gradients of `conv2d_forward_cpu` on the CPU, as one nogil Numba call for linear / ReLU.

    Args:
        x, kernel: the forward inputs.
        out: the forward output (after the activation; read only when the activation is not linear).
        grad_out: (N, OH, OW, C_out) gradient of the loss with respect to `out`.
        grad_x, grad_kernel, grad_bias: buffers to write, or None where no gradient is wanted.
        strides, padding, activation: as for the forward call.
        pre_activation: the forward's pre-activation buffer (required when needs_pre_activation).
        accumulate_x, accumulate_kernel, accumulate_bias: add into the buffer (True) or overwrite it.
        algorithm: "auto" (see `choose_cpu_algorithm`), "gemm", "winograd" or "winograd4" (3x3 stride 1
            only).
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
    relu = act == _RELU
    y2 = dy2  # read only when relu
    if act.code != _acts.LINEAR:
        out = np.ascontiguousarray(out, dtype=dt)
        if out.shape != oshape:
            raise ValueError(f"{who}: out (the forward output) must have shape {oshape}, received "
                             f"{out.shape}.")
        y2 = out.reshape(g.rows, g.co)
        if not relu:  # any other activation: dZ for the whole shard first, then a linear backward
            z2 = y2 if _acts.grad_from_output(act) else _check_pre(pre_activation, act, oshape, dt, who)
            dz_full = _workspace("dz_full", (g.rows, g.co), dt)
            _act_loops.activation_backward_cpu(z2, y2, dy2, dz_full, act)
            dy2 = dz_full
    want_db, want_dk, want_dx = grad_bias is not None, grad_kernel is not None, grad_x is not None
    db = _workspace("dbias", (g.co,), np.float64)
    db[:] = 0.0
    dummy = _workspace("dummy", (1, 1, 1, 1), dt)
    gx = grad_x if want_dx else dummy
    algo = check_algorithm(g, algorithm, "backward", who)
    if algo == "winograd4":
        tw = -(-g.ow // 4)
        step = max(1, WINOGRAD4_BACKWARD_TILES // tw)
        vz = 36 * step * tw
        du = _workspace("wg4_du", (36, g.c, g.co), dt)  # float32 partial sums, overwritten
        du64 = _workspace("wg4_du64", (36, g.c, g.co), np.float64)  # the float64 total, overwritten
        u_t = _wg4.filter_transform(kernel, transpose=True) if want_dx else du
        zero, strip, _ = _winograd_scratch(4, g.w, tw, g.c, g.co, dt, "")
        _wg4.backward(x, dy2.reshape(oshape), y2.reshape(oshape), relu, u_t, g.pt, g.pl, step, zero, strip,
                      _workspace("wg4_zstrip", (7, 4, tw, g.co), dt),
                      _workspace("wg4_gs", (6, 6, tw, g.c), dt), _workspace("wg4_gd", (6, tw, g.c), dt),
                      _workspace("wg4_v", (vz * g.c,), dt), _workspace("wg4_z", (vz * g.co,), dt), want_db, db,
                      want_dk, du, du64, want_dx, accumulate_x, _simd.flag(), gx)
        if want_dk:
            _store(grad_kernel, _wg4.kernel_from_transform(du64), accumulate_kernel)
    elif algo == "winograd":
        wg, m = _wg, 2
        tw, iw = -(-g.ow // m), -(-g.w // m)  # tiles per row: output (grad kernel), input (grad input)
        ns = WINOGRAD_SAMPLES
        points = (m + 2) ** 2
        zero, strip, _ = _winograd_scratch(m, g.w, tw, g.c, g.co, dt, "")
        dzero, dstrip, ds = _winograd_scratch(m, g.ow, iw, g.co, g.c, dt, "_dx")
        step_k, step_x = max(1, _winograd_tiles(algo) // tw), max(1, _winograd_tiles(algo) // iw)
        tiles = max(step_k * tw, step_x * iw)
        du = _workspace(f"wg{m}_du", (points, g.c, g.co), dt)
        du[...] = 0.0
        wg.backward(x, dy2, y2, relu, wg.filter_transform(kernel, flip=True), g.pt, g.pl, g.oh, g.ow, ns, step_k,
                    step_x, zero, strip, _workspace(f"wg{m}_zstrip", (m + 2, m, tw, g.co), dt), dzero, dstrip, ds,
                    _workspace(f"wg{m}_v", (points * tiles * max(g.c, g.co),), dt),
                    _workspace(f"wg{m}_m", (points * tiles * max(g.c, g.co),), dt),
                    _workspace("dz", (ns * g.oh * g.ow, g.co), dt), want_db, db, want_dk, du, want_dx,
                    accumulate_x, _simd.flag(), gx)
        if want_dk:
            _store(grad_kernel, wg.kernel_from_transform(du), accumulate_kernel)
    else:
        sum_db = want_db  # the bias gradient still to sum in gemm_backward
        phase_dx = want_dx and choose_dx_algorithm(g) == "phase"
        taps_dk = want_dk and _taps.use_taps(g, "kernel_grad")
        if relu and (phase_dx or taps_dk):  # the ReLU mask once for the shard: the gathers read dZ in any order
            dz_full = _workspace("dz_full", (g.rows, g.co), dt)
            _cpu.relu_grad_rows(dy2, y2, dz_full, db, want_db)
            dy2, relu, sum_db = dz_full, False, False
        if phase_dx:
            _phase_dx(g, dy2, kernel, accumulate_x, grad_x)
            want_dx, gx = False, dummy
        if taps_dk:
            _store(grad_kernel, _taps.kernel_grad(g, x, dy2.reshape(oshape), _simd.flag(), _workspace),
                   accumulate_kernel)
            want_dk = False
        if want_dx and not accumulate_x:
            grad_x[...] = 0.0
        gk_shape = (g.depth, g.co) if want_dk else (1, 1)
        # dZ shares the cache with the columns: counting only them, MNIST's first layer (9 taps, 32
        # channels) ran its whole 32-sample shard as one chunk, its dZ 2.8 MB (backward 0.73 ms against
        # 0.66 counting both; neutral to 4% faster on 32->64 stride 2 and a 5x5 16->32)
        step = _chunk_lines(g, dt.itemsize, g.co)
        rows = min(step, g.n * g.oh) * g.ow
        # the grad input multiplies by the transposed kernel matrix: BLAS reads the kernel transposed; only
        # the AVX-512 micro-kernels need a transposed copy (11-14 ms per call for 3x3 512 -> 512, which
        # was most of the backward of a ResNet's last stage on small images)
        copy_wt = want_dx and _simd.flag() is not None
        w = np.ascontiguousarray(kernel.reshape(g.depth, g.co).T) if copy_wt else kernel.reshape(g.depth, g.co)
        gk64 = _workspace("gk64", gk_shape, np.float64)
        gk32 = _workspace("gk32", gk_shape, dt)
        in64 = _cpu.gemm_backward(x.reshape(g.n, g.h, g.w * g.c), w, not copy_wt, dy2, y2, relu, g.sh,
                           g.sw, g.pt, g.pl, g.oh, g.ow, g.c, g.kh, g.kw, step,
                           _workspace("cols", (rows, g.kh, g.kw * g.c), dt), _workspace("dz", (rows, g.co), dt),
                           sum_db, db, want_dk, gk32, gk64, DK_FOLD_ROWS, want_dx, _simd.flag(), gx)
        if want_dk:
            _store(grad_kernel, (gk64 if in64 else gk32).reshape(kernel.shape), accumulate_kernel)
    if want_db:
        _store(grad_bias, db, accumulate_bias)


def _phase_dx(g: ConvGeometry, dy2, kernel, accumulate: bool, grad_x) -> None:
    """grad_x (=, or += when accumulate) the input gradient for dZ dy2 (rows, C_out) by `_conv_phase`."""
    dt = kernel.dtype
    wflat, woff = _phase.phase_kernels(kernel, g.sh, g.sw)
    depth = -(-g.kh // g.sh) * -(-g.kw // g.sw) * g.co
    nw = -(-g.w // g.sw)
    rows = max(nw, PHASE_CHUNK_BYTES // ((depth + g.c) * dt.itemsize))
    _phase.phase_dx(dy2.reshape(g.n, g.oh, g.ow, g.co), wflat, woff, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, rows,
                    _workspace("phase_cols", (rows * depth,), dt), _workspace("phase_res", (rows * g.c,), dt),
                    accumulate, _simd.flag(), grad_x)


def _store(dst, value, accumulate: bool) -> None:
    if accumulate:
        dst += value.astype(dst.dtype, copy=False)
    else:
        dst[...] = value


def _winograd_scratch(m: int, width: int, tiles_w: int, c_in: int, c_out: int, dt, tag: str):
    """(zero, strip, s) scratch of the F(m x m, 3x3) transforms: a zero image row of the input, the strip of
    row-transformed values split into m column phases ((m + 2, m, tiles_w + 1, c_in)), and the output
    transform's strip ((m, m + 2, tiles_w, c_out))."""
    zero = _workspace(f"wg{m}_zero{tag}", (width, c_in), dt)
    zero[...] = 0.0
    return (zero, _workspace(f"wg{m}_strip{tag}", (m + 2, m, tiles_w + 1, c_in), dt),
            _workspace(f"wg{m}_s{tag}", (m, m + 2, tiles_w, c_out), dt))


def _exact_zero_fields(x, g: ConvGeometry, b, relu: bool, out) -> None:
    """Give the outputs whose receptive field holds only zeros (padding included) the value an exact
    convolution gives them: the bias (after the fused ReLU, when `relu`). A Winograd tile that straddles
    the edge of a zero region mixes the region's outputs with nonzero inputs, and they do not cancel
    exactly: on the DeepLearning.AI object-localization lab's first batch (86% zero pixels, biases 0),
    F(4x4, 3x3) left 42,925 of the 2nd convolution's exact zeros tiny positive and 42,817 tiny negative,
    and each positive one let its dy through the ReLU into the bias gradient (TensorFlow's are exactly 0:
    its gradient stops there). That matters where a channel's bias is exactly 0 (the first step from
    Keras' zero initializer); `conv2d_forward_cpu` calls this only then. Without a bias (use_bias=False,
    where a BatchNormalization usually follows) it is not called: it would read the input once more at
    every step. Stride 1 (the Winograd paths')."""
    nonzero = np.any(x, axis=3)  # (N, H, W): a pixel with any nonzero (or NaN) channel
    padded = np.zeros((g.n, g.oh + g.kh - 1, g.ow + g.kw - 1), bool)
    rows = slice(g.pt, g.pt + min(g.h, padded.shape[1] - g.pt))
    cols = slice(g.pl, g.pl + min(g.w, padded.shape[2] - g.pl))
    padded[:, rows, cols] = nonzero[:, :rows.stop - rows.start, :cols.stop - cols.start]
    field = np.zeros((g.n, g.oh, g.ow), bool)
    for i in range(g.kh):
        for j in range(g.kw):
            field |= padded[:, i:i + g.oh, j:j + g.ow]
    if field.all():
        return
    out[~field] = np.maximum(b, 0) if relu else b


def _winograd_tiles(algo: str) -> int:
    """Tiles per transform + GEMM chunk (read at each call: tests shrink them)."""
    return WINOGRAD4_TILES if algo == "winograd4" else WINOGRAD_TILES


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


def __getattr__(name: str):
    # The float64 references (tests only) load on first use, so the kernels never import them.
    if name in ("conv2d_reference", "conv2d_backward_reference"):
        from kernels import _conv_reference

        return getattr(_conv_reference, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
