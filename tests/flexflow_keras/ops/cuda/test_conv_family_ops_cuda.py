"""The convolution-family ops with backend "cuda" (device arrays) against backend "cpu", float32, tiny
shapes: the ops' wiring of the CUDA kernels (views, pre-activations, accumulate flags)."""

import numpy as np
import pytest
from test_ops_cuda import _run, _specs

from flexflow_keras.ops.conv import Conv2DOp
from flexflow_keras.ops.conv1d import Conv1DOp, Pool1DOp
from flexflow_keras.ops.conv_transpose import Conv1DTransposeOp, Conv2DTransposeOp
from flexflow_keras.ops.depthwise import DepthwiseConv1DOp, DepthwiseConv2DOp
from flexflow_keras.ops.spatial import Pad2DOp, Resize2DOp

RNG = np.random.default_rng(4)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


CASES = [
    ("conv1d_gelu", Conv1DOp(strides=2, padding="same", dilation=1, activation="gelu"), [f32(2, 7, 2)],
     [f32(3, 2, 3), f32(3)]),
    ("conv1d_causal", Conv1DOp(padding="causal", dilation=2, activation="relu"), [f32(2, 6, 2)], [f32(2, 2, 3)]),
    ("pool1d", Pool1DOp(pool_size=3, strides=2, padding="same"), [f32(2, 7, 2)], []),
    ("conv2d_transpose", Conv2DTransposeOp(strides=(2, 1), padding="same", output_padding=(1, 0),
                                           activation="gelu"),
     [f32(2, 3, 3, 2)], [f32(3, 3, 3, 2), f32(3)]),
    ("conv1d_transpose", Conv1DTransposeOp(strides=2, activation="relu"), [f32(2, 3, 2)], [f32(3, 2, 2), f32(2)]),
    ("depthwise", DepthwiseConv2DOp(padding="same", dilation=(1, 2)), [f32(2, 4, 5, 2)], [f32(2, 2, 2, 2), f32(4)]),
    ("depthwise_grouped", DepthwiseConv2DOp(strides=(2, 1), padding="same", grouped=True), [f32(2, 5, 4, 3)],
     [f32(3, 3, 1, 3), f32(3)]),  # Conv2D(groups=channels)'s kernel (kh, kw, 1, channels)
    ("depthwise1d", DepthwiseConv1DOp(strides=2, padding="same"), [f32(2, 5, 2)], [f32(3, 2, 2), f32(4)]),
    ("conv2d_dilated_gelu", Conv2DOp(padding="same", activation="gelu", dilation=(2, 3)), [f32(2, 5, 6, 2)],
     [f32(3, 3, 2, 3), f32(3)]),  # the sub-grid gather / scatter around the conv2d CUDA kernels
    ("conv2d_dilated_relu", Conv2DOp(activation="relu", dilation=(2, 1)), [f32(2, 6, 4, 2)], [f32(2, 2, 2, 2)]),
    ("pad", Pad2DOp(pads=((1, -1), (0, 2))), [f32(2, 3, 3, 2)], []),
    ("resize1d", Resize2DOp(size=(1, 2), mode="bilinear"), [f32(2, 3, 2)], []),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_conv_family_op_on_cuda_matches_cpu(case):
    _, op, inputs, weights = case
    out = op.output_specs(_specs(inputs), _specs(weights))[0]
    dys = [RNG.standard_normal((inputs[0].shape[0],) + tuple(out.shape[1:])).astype(np.float32)]
    want = _run(op, "cpu", inputs, weights, dys, True)
    got = _run(op, "cuda", inputs, weights, dys, True)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"buffer {k} of {op}")
