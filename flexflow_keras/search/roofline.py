"""FLOPs and bytes of one piece of an op, for the roofline of devices whose kernels cannot be run here.

`work(node, tile)` gives (forward FLOPs, backward FLOPs, bytes moved forward, bytes moved backward, op
family). The families group ops whose kernels have similar efficiency (a GEMM, a convolution, a gather,
a memory-bound element-wise pass), so one calibration factor per family and device kind corrects the
roofline where measured times exist. `roofline_time` turns that into seconds on a `DeviceSpec`.
"""

from __future__ import annotations

import math

from flexflow_keras.ops.parallel import Box, Tile

# Default fraction of the roofline reached, per family, where no measurement can calibrate it (typical
# of cuBLAS/cuDNN and memory-bound CUDA kernels on data-centre GPUs).
EFFICIENCY = {"gemm": 0.7, "conv": 0.55, "gather": 0.5, "memory": 0.75, "norm": 0.6}
# Fixed cost of one kernel launch on a GPU (s); on a CPU the measured times include it.
GPU_LAUNCH = 6e-6

_FAMILY = {"dense": "gemm", "matmul": "gemm", "conv2d": "conv", "embedding": "gather", "batch_norm": "norm",
           "layer_norm": "norm", "softmax": "norm", "log_softmax": "norm", "loss": "norm", "einsum_dense": "gemm"}
# The other convolutions: multiply-adds per element of their output (or, transposed, of their input) from
# the weight box's dims: conv1d (taps, cin, co), depthwise (kh, kw, c, m) / (taps, c, m), transposed
# (kh, kw, f, c) / (taps, f, c), conv3d (kd, kh, kw, cin, co), conv3d_transpose (kd, kh, kw, f, c).
_CONV_MACS = {"conv1d": lambda w: w[0] * w[1], "conv3d": lambda w: w[0] * w[1] * w[2] * w[3],
              "conv3d_transpose": lambda w: w[0] * w[1] * w[2] * w[3], "depthwise_conv2d": lambda w: w[0] * w[1],
              "depthwise_conv1d": lambda w: w[0], "conv2d_transpose": lambda w: w[0] * w[1] * w[2],
              "conv1d_transpose": lambda w: w[0] * w[1]}
_TRANSPOSED = ("conv2d_transpose", "conv1d_transpose", "conv3d_transpose")
_FAMILY.update(dict.fromkeys((*_CONV_MACS, "conv_lstm"), "conv"))


def family(node) -> str:
    return _FAMILY.get(node.op.type_name, "memory")


def volume(box: Box) -> int:
    return math.prod(max(0, h - lo) for lo, h in zip(*box, strict=True))


def work(node, tile: Tile) -> tuple[float, float, float, float, str]:
    """(fwd FLOPs, bwd FLOPs, fwd bytes, bwd bytes, family) of one piece (float32 assumed for bytes)."""
    t = node.op.type_name
    ins = [volume(b) for b in tile.inputs]
    ws = [volume(b) for b in tile.weights]
    outs = [volume(b) for b in tile.outputs]
    saved = [volume(b) for b in tile.saved]
    elems_io = sum(ins) + sum(outs) + sum(saved)
    out = outs[0] if outs else 0
    fam = family(node)
    if t in ("dense", "matmul", "einsum_dense"):
        n = getattr(node.op, "n_contract", 1)  # einsum_dense contracts the input's last n dims
        k = math.prod(h - lo for lo, h in zip(tile.inputs[0][0][-n:], tile.inputs[0][1][-n:], strict=True)) \
            if tile.inputs else 1
        flops = 2.0 * out * k
        fwd_b = 4.0 * (elems_io + sum(ws))
        return flops, 2 * flops, fwd_b, 2 * fwd_b, fam
    if t == "conv2d":
        kh, kw, cin = (h - lo for lo, h in zip(tile.weights[0][0][:3], tile.weights[0][1][:3], strict=True))
        flops = 2.0 * out * kh * kw * cin
        fwd_b = 4.0 * (elems_io + sum(ws))
        return flops, 2 * flops, fwd_b, 2 * fwd_b, fam
    if t in _CONV_MACS:
        w = [h - lo for lo, h in zip(*tile.weights[0], strict=True)]
        flops = 2.0 * (ins[0] if t in _TRANSPOSED else out) * _CONV_MACS[t](w)
        fwd_b = 4.0 * (elems_io + sum(ws))
        return flops, 2 * flops, fwd_b, 2 * fwd_b, fam
    if t == "conv_lstm":
        # every frame position of every step: 4F gate outputs, each a window over the input's and h's channels
        z = tile.saved[0]
        positions = volume(z) / max(1, z[1][-1] - z[0][-1])
        flops = 2.0 * positions * (ws[0] + ws[1])
        fwd_b = 4.0 * (elems_io + sum(ws))
        return flops, 2 * flops, fwd_b, 2 * fwd_b, fam
    if t == "embedding":
        # the gather reads and writes the looked-up rows; backward zeroes the table piece's gradient and
        # scatters the rows back (a dense table gradient)
        return 0.0, float(out), 8.0 * out, 4.0 * (2 * out + 2 * sum(ws)), fam
    fwd_b = 4.0 * (elems_io + sum(ws))
    per = 8.0 if fam == "norm" else 1.0
    return per * out, 2 * per * out, fwd_b, 2 * fwd_b, fam


def roofline_time(flops: float, nbytes: float, device, fam: str, factor: float | None = None) -> float:
    """Seconds for `flops` and `nbytes` on `device` at the family's efficiency (or a fitted `factor`,
    measured time / roofline time)."""
    raw = max(flops / device.flops, nbytes / device.memory_bandwidth)
    if factor is not None:
        return raw * factor + (GPU_LAUNCH if device.kind == "GPU" else 0.0)
    return raw / EFFICIENCY.get(fam, 0.6) + (GPU_LAUNCH if device.kind == "GPU" else 0.0)
