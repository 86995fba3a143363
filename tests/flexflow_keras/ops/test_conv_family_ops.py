"""The convolution-family ops through the Op contract (op_harness.check_op: float64 reference, central-
difference gradients, accumulate flags, batch shards), their parallel rules (every tile of a split
computes its slice of the whole op, forward and backward), and errors."""

import numpy as np
import pytest
from op_harness import check_op, run_backward, run_forward, specs

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.base import KernelContext, op_registry
from flexflow_keras.ops.conv1d import Conv1DOp, Pool1DOp, conv1d, pool1d
from flexflow_keras.ops.conv_transpose import (
    Conv1DTransposeOp,
    Conv2DTransposeOp,
    conv1d_transpose,
    conv2d_transpose,
)
from flexflow_keras.ops.depthwise import (
    DepthwiseConv1DOp,
    DepthwiseConv2DOp,
    depthwise_conv1d,
    depthwise_conv2d,
)
from flexflow_keras.ops.spatial import Pad2DOp, Resize2DOp, spatial_pad, upsample
from kernels import _conv_family_reference as R
from kernels import pool2d as P
from kernels import reference as ref

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape)


CASES = [
    ("conv1d_causal", Conv1DOp(strides=1, padding="causal", dilation=2), [rand(3, 8, 2)], [rand(3, 2, 3), rand(3)],
     lambda x, k, b: R.conv1d_reference(x, k, b, 1, "causal", 2)),
    ("conv1d_same", Conv1DOp(strides=2, padding="same"), [rand(3, 7, 2)], [rand(2, 2, 4)],
     lambda x, k: R.conv1d_reference(x, k, None, 2, "same", 1)),
    ("pool1d_max", Pool1DOp(pool_size=3, strides=2, padding="same", mode="max"), [rand(3, 7, 2)], [],
     lambda x: P.pool2d_reference(x[:, None], (1, 3), (1, 2), "same", "max")[:, 0]),
    ("pool1d_avg", Pool1DOp(pool_size=2, strides=1, mode="avg"), [rand(3, 5, 2)], [],
     lambda x: P.pool2d_reference(x[:, None], (1, 2), (1, 1), "valid", "avg")[:, 0]),
    ("conv2d_transpose", Conv2DTransposeOp(strides=(2, 1), padding="same", output_padding=(1, 0)),
     [rand(3, 3, 4, 2)], [rand(3, 3, 4, 2), rand(4)],
     lambda x, k, b: R.conv2d_transpose_reference(x, k, b, (2, 1), "same", (1, 0))),
    ("conv2d_transpose_gelu", Conv2DTransposeOp(strides=(2, 2), activation="gelu"), [rand(2, 2, 3, 2)],
     [rand(3, 2, 3, 2), rand(3)],
     lambda x, k, b: ref.activation("gelu", R.conv2d_transpose_reference(x, k, b, (2, 2), "valid"))),
    ("conv1d_transpose", Conv1DTransposeOp(strides=3, padding="same", output_padding=2), [rand(3, 4, 2)],
     [rand(4, 3, 2), rand(3)],
     lambda x, k, b: R.conv2d_transpose_reference(x[:, None], k[None], b, (1, 3), "same", (0, 2))[:, 0]),
    ("depthwise", DepthwiseConv2DOp(strides=(1, 2), padding="same", dilation=(2, 1)), [rand(3, 6, 5, 2)],
     [rand(2, 3, 2, 2), rand(4)], lambda x, k, b: R.depthwise_conv2d_reference(x, k, b, (1, 2), "same", (2, 1))),
    ("depthwise1d", DepthwiseConv1DOp(strides=2, padding="same", dilation=1), [rand(3, 7, 2)],
     [rand(3, 2, 2), rand(4)],
     lambda x, k, b: R.depthwise_conv2d_reference(x[:, None], k[None], b, (1, 2), "same", (1, 1))[:, 0]),
    ("depthwise_m1", DepthwiseConv2DOp(strides=(2, 1)), [rand(3, 6, 5, 3)], [rand(2, 2, 3, 1), rand(3)],
     lambda x, k, b: R.depthwise_conv2d_reference(x, k, b, (2, 1), "valid", (1, 1))),
    ("pad", Pad2DOp(pads=((1, -1), (-2, 2))), [rand(3, 4, 5, 2)], [],
     lambda x: R.pad2d_reference(x, (1, -1), (-2, 2))),
    ("pad1d", Pad2DOp(pads=((0, 0), (2, -1))), [rand(3, 4, 2)], [],
     lambda x: R.pad2d_reference(x[:, None], (0, 0), (2, -1))[:, 0]),
    ("bilinear", Resize2DOp(size=(2, 3), mode="bilinear"), [rand(3, 2, 3, 2)], [],
     lambda x: R.resize2d_reference(x, (2, 3), "bilinear")),
    ("nearest1d", Resize2DOp(size=(1, 2)), [rand(3, 3, 2)], [],
     lambda x: R.resize2d_reference(x[:, None], (1, 2), "nearest")[:, 0]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_op_contract(case):
    _, op, inputs, weights, ref = case
    check_op(op, inputs, weights, ref=ref, shards=2, rtol=1e-9, atol=1e-10)


def _box(a, box):
    return a[tuple(slice(lo, hi) for lo, hi in zip(*box, strict=True))]


def check_tiles(op, inputs, weights, degrees):
    """Run `op` on every tile of a split of its output by `degrees` as the execution does (each piece on its
    input and weight boxes, with its local attributes; gradients summed where boxes overlap) and compare
    with the whole op."""
    space = op.parallel_space(specs(inputs), specs(weights))
    for d, deg in enumerate(degrees):
        space.check_degree(op.type_name, d, deg)
    outs, saved, stats, _ = run_forward(op, inputs, weights)
    dys = [RNG.standard_normal(outs[0].shape)]
    gin, gw = run_backward(op, inputs, weights, outs, saved, stats, dys)
    shapes = par.TileShapes(tuple(x.shape for x in inputs), tuple(w.shape for w in weights),
                            tuple(o.shape for o in outs), tuple(s.shape for s in saved))
    got_out = np.full(outs[0].shape, np.nan)
    got_gin = [np.zeros_like(x) for x in inputs]
    got_gw = [np.zeros_like(w) for w in weights]
    for box in par.tile_boxes(outs[0].shape, degrees):
        tile = op.tile(shapes, box)
        xs = [_box(x, b).copy() for x, b in zip(inputs, tile.inputs, strict=True)]
        ws = [_box(w, b).copy() for w, b in zip(weights, tile.weights, strict=True)]
        o = [np.empty(_box(outs[0], tile.outputs[0]).shape)]
        s = [np.empty(_box(a, b).shape, a.dtype) for a, b in zip(saved, tile.saved, strict=True)]
        ctx = KernelContext(tile=tile)
        op.forward(ctx, xs, ws, o, s, [])
        _box(got_out, box)[...] = o[0]
        gi, gwt = [np.empty_like(x) for x in xs], [np.empty_like(w) for w in ws]
        op.backward(ctx, xs, ws, o, s, [], [_box(dys[0], box).copy()], gi, gwt)
        for full, part, b in zip(got_gin + got_gw, gi + gwt, tile.inputs + tile.weights, strict=True):
            _box(full, b)[...] += part
    np.testing.assert_allclose(got_out, outs[0], rtol=1e-10, atol=1e-12)
    for a, b in zip(got_gin + got_gw, gin + gw, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


TILES = [
    ("conv1d", Conv1DOp(strides=2, padding="same", dilation=1, activation="gelu"), [rand(2, 11, 2)],
     [rand(3, 2, 4), rand(4)], (2, 3, 2)),
    ("conv1d_causal", Conv1DOp(padding="causal", dilation=2), [rand(2, 9, 2)], [rand(3, 2, 3)], (1, 3, 3)),
    ("pool1d", Pool1DOp(pool_size=3, strides=2, padding="same", mode="max"), [rand(2, 9, 4)], [], (2, 2, 2)),
    ("pool1d_avg", Pool1DOp(pool_size=2, strides=1, mode="avg"), [rand(2, 9, 2)], [], (1, 3, 1)),
    ("depthwise", DepthwiseConv2DOp(padding="same", dilation=(1, 2)), [rand(2, 7, 6, 3)],
     [rand(3, 2, 3, 1), rand(3)], (2, 2, 2, 3)),
    ("depthwise_m2", DepthwiseConv2DOp(strides=(2, 2)), [rand(2, 7, 6, 2)], [rand(3, 3, 2, 2), rand(4)],
     (1, 2, 2, 1)),
    ("conv2d_transpose", Conv2DTransposeOp(strides=(2, 2), padding="valid"), [rand(2, 3, 3, 2)],
     [rand(3, 3, 4, 2), rand(4)], (2, 1, 1, 2)),
    ("conv1d_transpose", Conv1DTransposeOp(strides=2, activation="gelu"), [rand(2, 4, 2)],
     [rand(3, 4, 2), rand(4)], (2, 1, 2)),
    ("conv2d_transpose_sigmoid", Conv2DTransposeOp(padding="same", activation="sigmoid"), [rand(2, 3, 3, 2)],
     [rand(2, 2, 4, 2), rand(4)], (2, 1, 1, 2)),
    ("depthwise1d", DepthwiseConv1DOp(dilation=2), [rand(2, 7, 3)], [rand(2, 3, 1), rand(3)], (2, 1, 3)),
    ("depthwise1d_m2", DepthwiseConv1DOp(padding="same"), [rand(2, 7, 2)], [rand(2, 2, 2)], (2, 1, 1)),
    ("pad", Pad2DOp(pads=((1, 0), (0, -1))), [rand(2, 3, 4, 3)], [], (2, 1, 1, 3)),
    ("resize", Resize2DOp(size=(2, 2), mode="bilinear"), [rand(2, 3, 2, 2)], [], (1, 1, 1, 2)),
]


@pytest.mark.parametrize("case", TILES, ids=[c[0] for c in TILES])
def test_parallel_tiles_reproduce_the_whole_op(case):
    _, op, inputs, weights, degrees = case
    check_tiles(op, inputs, weights, degrees)


def test_parallel_rules_refuse_what_they_cannot_split():
    from flexflow_keras.errors import StrategyError

    x, k = specs([rand(2, 7, 6, 2)]), specs([rand(3, 3, 2, 2)])
    with pytest.raises(StrategyError, match="depth_multiplier > 1"):
        par.check_parallel(DepthwiseConv2DOp(), "dw", x, k, (1, 1, 1, 2))
    with pytest.raises(StrategyError, match="output rows and columns are not split"):
        par.check_parallel(Conv2DTransposeOp(), "up", specs([rand(2, 3, 3, 2)]), specs([rand(3, 3, 4, 2)]),
                           (1, 2, 1, 1))
    with pytest.raises(StrategyError, match="upsampling moves data across it"):
        par.check_parallel(Resize2DOp(), "up", x, [], (1, 1, 2, 1))


def test_functional_forms_eager_and_registered():
    x = rand(2, 5, 4, 3).astype("float32")
    assert conv2d_transpose(x, rand(3, 3, 2, 3).astype("float32"), strides=2, padding="same").shape == (2, 10, 8, 2)
    assert depthwise_conv2d(x, rand(3, 3, 3, 2).astype("float32")).shape == (2, 3, 2, 6)
    assert spatial_pad(x, ((1, 1), (0, -1))).shape == (2, 7, 3, 3)
    assert upsample(x, (2, 1), "bilinear").shape == (2, 10, 4, 3)
    s = rand(2, 9, 3).astype("float32")
    assert conv1d(s, rand(3, 3, 4).astype("float32"), padding="causal").shape == (2, 9, 4)
    assert pool1d(s, 2, padding="same").shape == (2, 5, 3)
    assert conv1d_transpose(s, rand(3, 2, 3).astype("float32"), strides=2).shape == (2, 19, 2)
    assert depthwise_conv1d(s, rand(3, 3, 2).astype("float32"), padding="same").shape == (2, 9, 6)
    registry = op_registry()
    for name, cls in (("conv1d", Conv1DOp), ("pool1d", Pool1DOp), ("conv2d_transpose", Conv2DTransposeOp),
                      ("conv1d_transpose", Conv1DTransposeOp), ("depthwise_conv1d", DepthwiseConv1DOp),
                      ("depthwise_conv2d", DepthwiseConv2DOp), ("spatial_pad", Pad2DOp), ("upsample", Resize2DOp)):
        assert registry[name] is cls and hash(cls()) == hash(cls())


def test_op_errors():
    with pytest.raises(ValueError, match="padding 'valid', 'same' or 'causal'"):
        conv1d(rand(1, 5, 1), rand(2, 1, 1), padding="full")
    with pytest.raises(ShapeError, match="3-D \\(batch, steps, channels\\)"):
        Conv1DOp().output_specs(specs([rand(1, 5)]), specs([rand(2, 1, 1)]))
    with pytest.raises(ShapeError, match="output_padding=\\(3, 0\\)"):
        Conv2DTransposeOp(strides=(2, 2), padding="same", output_padding=(3, 0)).output_specs(
            specs([rand(1, 3, 3, 1)]), specs([rand(3, 3, 1, 1)]))
    with pytest.raises(ShapeError, match="leaves nothing"):
        Pad2DOp(pads=((-2, -1), (0, 0))).output_specs(specs([rand(1, 3, 3, 1)]), [])
    with pytest.raises(ValueError, match="interpolation 'nearest' or 'bilinear'"):
        upsample(rand(1, 2, 2, 1), (2, 2), "bicubic")


def test_roofline_counts_the_multiply_adds():
    from types import SimpleNamespace

    from flexflow_keras.search import roofline

    def flops(op, x, k, out):
        tile = par.Tile((par.whole(x),), (par.whole(k),), (par.whole(out),))
        fwd, bwd, _, _, fam = roofline.work(SimpleNamespace(op=op), tile)
        assert fam == "conv" and bwd == 2 * fwd
        return fwd

    assert flops(Conv1DOp(), (2, 10, 3), (3, 3, 4), (2, 8, 4)) == 2 * (2 * 8 * 4) * 3 * 3
    assert flops(DepthwiseConv2DOp(), (2, 6, 6, 3), (3, 3, 3, 2), (2, 4, 4, 6)) == 2 * (2 * 4 * 4 * 6) * 9
    assert flops(Conv2DTransposeOp(strides=(2, 2)), (2, 3, 3, 4), (3, 3, 5, 4), (2, 7, 7, 5)) == \
        2 * (2 * 3 * 3 * 4) * 3 * 3 * 5
    assert flops(Conv1DTransposeOp(strides=2), (2, 3, 4), (3, 5, 4), (2, 7, 5)) == 2 * (2 * 3 * 4) * 3 * 5
    assert flops(DepthwiseConv1DOp(), (2, 9, 3), (3, 3, 2), (2, 7, 6)) == 2 * (2 * 7 * 6) * 3
    from flexflow_keras.ops.conv3d import Conv3DOp, Conv3DTransposeOp
    from flexflow_keras.ops.conv_lstm import ConvLSTMOp

    assert flops(Conv3DOp(), (2, 5, 6, 6, 3), (2, 3, 3, 3, 4), (2, 4, 4, 4, 4)) == 2 * (2 * 4 * 4 * 4 * 4) * 2 * 9 * 3
    assert flops(Conv3DTransposeOp(), (2, 3, 3, 3, 4), (2, 2, 2, 5, 4), (2, 4, 4, 4, 5)) == \
        2 * (2 * 3 * 3 * 3 * 4) * 8 * 5
    # a ConvLSTM step: 4F gate outputs per position, each over the input's C and h's F channels
    lstm = par.Tile((par.whole((2, 5, 6, 6, 3)),), (par.whole((3, 3, 3, 8)), par.whole((3, 3, 2, 8))),
                    (par.whole((2, 6, 6, 2)),) * 3, (par.whole((2, 5, 6, 6, 8)),) + (par.whole((2, 5, 6, 6, 2)),) * 2)
    fwd, bwd, _, _, fam = roofline.work(SimpleNamespace(op=ConvLSTMOp(padding="same")), lstm)
    assert fam == "conv" and bwd == 2 * fwd and fwd == 2 * (2 * 5 * 6 * 6) * 8 * 9 * (3 + 2)
