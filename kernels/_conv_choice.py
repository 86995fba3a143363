"""Which algorithm a 2-D convolution runs on CPUs, and the sizes of one call: `ConvGeometry` (validated
by `conv_geometry`), the forward/backward algorithm per shape (`choose_cpu_algorithm`, with the
measurements behind each threshold), an algorithm asked for by name (`check_algorithm`) and the input
gradient's form within im2col (`choose_dx_algorithm`). `kernels/conv2d.py` runs what these choose.
"""

from __future__ import annotations

from typing import NamedTuple

from kernels._conv_geometry import check_window_padding, pair, window_geometry

# F(4x4, 3x3) is chosen from this output size (pixels per side) and channel count (choose_cpu_algorithm)
WINOGRAD4_MIN_SIZE = 6
WINOGRAD4_MIN_CHANNELS = 4
# ... and the least output pixels (N * OH * OW) of one call: the filter transform (and, in the backward, the
# kernel gradient's inverse transform) costs C_in * C_out * 36 values per call whatever the batch, so a
# shard with few pixels and many channels spends more on it than the transform saves in the GEMMs (see
# choose_cpu_algorithm: 288 pixels lost at 128 and 512 channels, 512 won at 256).
WINOGRAD_MIN_PIXELS = 512

# The phase-gather input gradient (`choose_dx_algorithm`): from this many input channels ...
PHASE_DX_MIN_CHANNELS = 128
# ... and at stride 1, from this many times the output channels.
PHASE_DX_STRIDE1_RATIO = 4


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


def check_shapes(x_shape, kernel_shape, who: str) -> tuple[int, ...]:
    """(n, h, w, c, kh, kw, co) of an NHWC input and a (kh, kw, c, co) kernel; ValueError naming `who`."""
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
    return n, h, w, c, kh, kw, co


def conv_geometry(x_shape, kernel_shape, strides=(1, 1), padding="valid", who="conv2d") -> ConvGeometry:
    """Validate shapes and arguments and return the call's sizes.

    Raises:
        ValueError: naming `who`, when a shape or argument is invalid.
    """
    n, h, w, c, kh, kw, co = check_shapes(x_shape, kernel_shape, who)
    sh, sw = pair(strides, who, "strides")
    padding = check_window_padding(padding, who)
    oh, ow, pt, _, pl, _ = window_geometry(h, w, (kh, kw), (sh, sw), padding)
    if oh <= 0 or ow <= 0:
        if padding == "valid":
            raise ValueError(f"{who}: a {kh}x{kw} kernel does not fit the {h}x{w} input with "
                             f"padding='valid'; use padding='same' or a larger input.")
        raise ValueError(f"{who}: a {kh}x{kw} kernel does not fit the {h}x{w} input with explicit "
                         f"padding={padding!r}; give the input more rows/columns or larger pads.")
    return ConvGeometry(n, h, w, c, kh, kw, co, sh, sw, oh, ow, pt, pl)


def choose_cpu_algorithm(g: ConvGeometry, pass_: str = "forward") -> str:
    """The CPU algorithm for the "forward" or the "backward" (both gradients) of a convolution.

    Rule, from single-threaded measurements on the 2-core EPYC Zen3 (AVX2, OpenBLAS Haswell sgemm at
    ~89 GFLOP/s on one core), 32-sample shards (benchmarks/conv_kernels.py --algorithms prints them):

    - "direct" for the forward of a 3x3 kernel over a single input channel (MNIST's first layer:
      0.44 ms vs 1.02 ms for im2col + sgemm): the nine taps stay in registers. Its backward stays on
      im2col + sgemm (1.04-1.14 ms vs 1.12-1.33 ms for a direct loop adding each pixel into nine
      L1-resident rows of the kernel gradient).
    - "winograd4" (F(4x4, 3x3)) for stride-1 3x3 kernels with at least WINOGRAD4_MIN_CHANNELS input
      and output channels, an output of at least WINOGRAD4_MIN_SIZE pixels a side and at least
      WINOGRAD_MIN_PIXELS output pixels in the call: 2.25
      multiplies per output instead of 4, and about half the transformed bytes. Measured on the Xeon
      (AVX-512) here, one thread, 32 samples, forward / backward ms, gemm vs winograd vs winograd4:
      MNIST conv2 32->64 on 26x26 5.40 / 11.39 vs 4.17 / 11.02 vs 2.51 / 6.36; CIFAR's 32->32 same on
      32x32 5.41 / 11.47 vs 4.91 / 11.08 vs 2.87 / 5.62; 64->64 valid on 15x15 3.06 / 6.38 vs 2.43 /
      6.03 vs 1.89 / 4.14; 16->32 on 28x28 1.84 / 4.43 vs 2.30 / 5.91 vs 1.52 / 3.21; 4->8 0.57 / 1.58 vs
      1.25 / 3.32 vs 0.52 / 1.27; 128->128 same on 7x7 3.75 / 8.81 vs 3.10 / 6.83 vs 2.11 / 6.67; even
      on 6x6 (64->64 0.72 / 1.52 vs 0.67 / 1.39 vs 0.65 / 1.50); but 3->32 same on 32x32 1.10 / 3.49
      vs 2.06 / 6.35 vs 1.27 / 3.03 and on 4x4 (128->128 1.08 / 2.76 vs 1.07 / 3.00 vs 1.19 / 4.92:
      tiles past the edge are wasted work). With OpenBLAS's SkylakeX kernels for every GEMM the same
      order holds. Its backward now forms the grad input as the forward's adjoint (`_conv_winograd4`),
      faster on every shape above (backward ms, before / after): MNIST conv2 6.84 / 4.86, 32->32 same on
      32x32 5.92 / 5.32, 64->64 on 15x15 4.34 / 4.13, 16->32 on 28x28 3.34 / 3.11, 128->128 same on 7x7
      8.03 / 5.93, 64->64 same on 6x6 1.72 / 1.44. Its rounding error is larger: 1.3-3.6e-6 of the
      output's largest magnitude (forward; grad input 1.2-2.9e-6) with the points 0, +-5/8, +-3/2, about
      2x TensorFlow's float32 convolution in the forward (0, +-1, +-2 had 5-14e-6), against 3-7e-7
      for "winograd" (tests/kernels/test_conv_winograd_accuracy.py).
      Few pixels with many channels (a ResNet's or VGG's last stages on 32x32 images: 1x1 to 4x4 maps of
      256-2048 channels) favour im2col + GEMM: the transforms of the kernel cost the same whatever the
      batch. Measured on the 2-core EPYC (AVX2), one thread (thread CPU time, best of 7, the machine busy
      with other work), forward + backward ms, gemm vs F(2x2) vs F(4x4): N=8 on 6x6 512->512 82 vs 106 vs
      130, 128->128 4.5 vs 4.4 vs 6.3; N=4 on 8x8 256->256 16.3 vs 18.2 vs 24.9; but N=8 on 8x8 256->256
      (512 pixels) 35 vs 28 vs 26, N=16 on 8x8 128->128 14.2 vs 9.5 vs 8.3, N=32 on 7x7 128->128 22.9 vs
      21.8 vs 14.5, N=32 on 6x6 64->64 3.5 vs 3.4 vs 3.1.
    - "winograd" (F(2x2, 3x3)) is not chosen: below WINOGRAD4_MIN_SIZE outputs a side its tiles past
      the edge waste work and im2col + GEMM was as fast or faster on both hosts. EPYC as above: N=8 on
      1x1 512->512 25 vs 85 (F(4x4) 132), on 2x2 27 vs 71, N=8 on 3x3 256->256 7.4 vs 15.7, N=32 on 4x4
      64->64 1.6 vs 2.5, N=32 on 5x5 64->64 2.5 vs 3.4; the Xeon (AVX-512) on 4x4 128->128 3.84 vs 4.07
      (above). It stays available as algorithm="winograd".
    - "gemm" (im2col + sgemm) for everything else; within it, a convolution with few output channels
      (`_conv_taps.use_taps`) runs its forward (stride 1) and kernel gradient (deep im2col) by tap
      products, and the input gradient goes by stride phase or col2im (`choose_dx_algorithm`).
      Direct loop nests with the output-channel loop innermost were slower than im2col + sgemm for
      every other shape measured, forward and backward: 2.5x (C_in=1, grad input) to 6x (C_in=32 -> 64,
      grad input); BLAS runs at ~90% of peak on chunks that stay in L2 and im2col costs ~10% of the GEMM.
    """
    if ((g.kh, g.kw, g.sh, g.sw) == (3, 3, 1, 1) and min(g.oh, g.ow) >= WINOGRAD4_MIN_SIZE
            and min(g.c, g.co) >= WINOGRAD4_MIN_CHANNELS and g.n * g.oh * g.ow >= WINOGRAD_MIN_PIXELS):
        return "winograd4"
    if pass_ == "forward" and g.kh == 3 and g.kw == 3 and g.c == 1:
        return "direct"
    return "gemm"


def check_algorithm(g: ConvGeometry, algorithm: str, pass_: str, who: str) -> str:
    if algorithm == "auto":
        return choose_cpu_algorithm(g, pass_)
    ok = {"gemm": True,
          "direct": pass_ == "forward" and (g.kh, g.kw, g.c) == (3, 3, 1),
          "winograd": (g.kh, g.kw, g.sh, g.sw) == (3, 3, 1, 1),
          "winograd4": (g.kh, g.kw, g.sh, g.sw) == (3, 3, 1, 1)}
    if not ok.get(algorithm, False):
        raise ValueError(f"{who}: algorithm={algorithm!r} does not apply to a {g.kh}x{g.kw} kernel over "
                         f"{g.c} channels with strides ({g.sh}, {g.sw}) ('direct': 3x3 single-channel "
                         f"forward; 'winograd', 'winograd4': 3x3 stride 1); use 'auto' or 'gemm'.")
    return algorithm


def choose_dx_algorithm(g: ConvGeometry) -> str:
    """How the im2col path forms the input gradient: "phase" (`_conv_phase`: per stride phase, a gather
    of dZ and one GEMM into C_in columns, each input pixel written once) or "col2im" (dZ @ kernel^T into a
    (pixels x KH*KW*C_in) matrix with the short reduction C_out, added back window by window).

    "phase" when C_in >= C_out and C_in >= PHASE_DX_MIN_CHANNELS. Measured on one thread, 32 samples, 4x4
    stride 2 "same" (ms, col2im vs phase; the Conv2DTranspose rows are their forward): 32x32x256 ->
    64x64x512 transpose 3318 vs 880 (TensorFlow 891), 16x16x128 -> 32x32x256 transpose 106 vs 53-64
    (TensorFlow 60), conv 16x16x128 -> 8x8x128 10.6 vs 8.8; 5x5 stride 1 conv 64x64x512 -> 3 753 vs 130
    (TensorFlow 226); 2x2 stride 2 valid 8x8x512 -> 512 16.5 vs 8.6; 3x3 stride 2 16x16x128 -> 128 4.6 vs
    4.4; but with fewer input channels col2im wins: 32x32x64 -> 16x16x128 (C_in < C_out) 15.8 vs 19.3-21,
    5x5 stride 1 28x28x32 -> 32 8.3 vs 10.6, 3x3 stride 2 32x32x64 -> 64 3.7 vs 4.8, 1x1 56x56x64 -> 64
    6.0 vs 7.5, 5x5 32x32x64 -> 32 23.4 vs 23.9; 1x1 14x14x256 -> 64 1.74 vs 1.78.

    At stride 1 there is one phase, which gathers KH*KW*C_out values for every input pixel and reorders
    the kernel (KH*KW*C_in*C_out values) at every call, where col2im adds KH*KW*C_in values per output
    pixel; so phase needs C_in >= PHASE_DX_STRIDE1_RATIO * C_out, a kernel larger than 1x1 (a 1x1
    col2im adds nothing up) and pixels * (C_in - C_out) > C_in * C_out (the gathers and the reorder
    cost less than the adds). 3x3 valid, one thread (thread CPU time, best of 7, a busy machine),
    col2im vs phase ms: 128 -> 128 on 16x16 24.7 vs 37.5, 512 -> 512 on 3x3 (8 samples) 12.5 vs 16.2,
    256 -> 256 on 4x4 3.2 vs 8.8, 128 -> 128 on 8x8 4.4 vs 8.0; at 4x and 8x fewer output channels they
    tie or phase wins: 64 -> 16 on 28x28 12.4 vs 11.4, 128 -> 16 23.6 vs 18.5, 256 -> 32 on 14x14 11.3 vs
    11.4 (and 512 -> 3 above); but 1x1 2048 -> 512 on 32 samples of 1x1 (a ResNet's last stage on 32x32
    images) 1.3 vs 8 (the kernel's reorder).
    """
    if g.sh == g.sw == 1 and (g.kh * g.kw == 1 or g.n * g.oh * g.ow * (g.c - g.co) <= g.c * g.co):
        return "col2im"
    least = max(g.co * (PHASE_DX_STRIDE1_RATIO if g.sh == g.sw == 1 else 1), PHASE_DX_MIN_CHANNELS)
    return "phase" if g.c >= least else "col2im"
