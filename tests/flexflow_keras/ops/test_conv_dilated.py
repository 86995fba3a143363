"""Conv2DOp with a dilation (atrous convolution): shapes, the Op contract against the float64 reference
(central-difference gradients, accumulate flags, batch shards), its parallel rules (batch, channel and
height/width splits with the dilated window's halos compute the whole op), the functional form, errors."""

import numpy as np
import pytest
from op_harness import check_op, specs
from test_conv_family_ops import check_tiles

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.conv import Conv2DOp, conv2d
from flexflow_keras.ops.graph import KerasTensor, TensorSpec, Variable
from kernels._conv_reference import conv2d_reference

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape)


def test_output_shapes_use_the_dilated_window():
    x = [TensorSpec((None, 13, 11, 3))]
    k = [TensorSpec((3, 3, 3, 4))]
    assert Conv2DOp(padding="same", dilation=(6, 6)).output_specs(x, k)[0].shape == (None, 13, 11, 4)
    assert Conv2DOp(dilation=(2, 3)).output_specs(x, k)[0].shape == (None, 9, 5, 4)  # windows 5 and 7
    assert Conv2DOp(dilation=(2, 3), activation="gelu").saved_specs(x, k)[0].shape == (None, 9, 5, 4)
    assert Conv2DOp(dilation=(1, 5)).output_specs([TensorSpec((None, None, 11, 3))], k)[0].shape == \
        (None, None, 1, 4)
    with pytest.raises(ShapeError, match=r"input width 11 .* smaller than the kernel's \(dilated by \(1, 6\)\) 13"):
        Conv2DOp(dilation=(1, 6)).output_specs(x, k)
    assert Conv2DOp(dilation=(2, 2)) != Conv2DOp() and hash(Conv2DOp(dilation=(2, 2))) == hash(Conv2DOp(dilation=(2, 2)))


CASES = [
    ("same_relu", Conv2DOp(padding="same", activation="relu", dilation=(2, 3)), [rand(3, 7, 8, 2)],
     [rand(3, 3, 2, 3), rand(3)]),
    ("valid_gelu", Conv2DOp(activation="gelu", dilation=(3, 2)), [rand(2, 9, 6, 2)], [rand(2, 3, 2, 2), rand(2)]),
    ("same_tanh_no_bias", Conv2DOp(padding="same", activation="tanh", dilation=(4, 4)), [rand(2, 5, 6, 3)],
     [rand(3, 3, 3, 2)]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_op_contract(case):
    _, op, inputs, weights = case

    def ref(x, k, b=None):
        return conv2d_reference(x, k, b, (1, 1), op.padding, op.activation, op.dilation)

    check_op(op, inputs, weights, ref=ref, shards=2, rtol=1e-9, atol=1e-10)


TILES = [
    ("height_width", Conv2DOp(padding="same", activation="gelu", dilation=(2, 3)), [rand(2, 9, 8, 2)],
     [rand(3, 3, 2, 3), rand(3)], (2, 3, 2, 1)),
    ("rows_past_the_image", Conv2DOp(padding="same", activation="relu", dilation=(5, 5)), [rand(2, 6, 7, 2)],
     [rand(3, 3, 2, 2), rand(2)], (1, 3, 3, 1)),
    ("valid_channels", Conv2DOp(activation="tanh", dilation=(2, 2)), [rand(3, 9, 10, 2)],
     [rand(3, 2, 2, 4), rand(4)], (3, 2, 1, 2)),
    ("batch_channels", Conv2DOp(padding="same", dilation=(3, 1)), [rand(4, 7, 5, 2)], [rand(2, 2, 2, 4)],
     (2, 1, 1, 4)),
]


@pytest.mark.parametrize("case", TILES, ids=[c[0] for c in TILES])
def test_parallel_tiles_reproduce_the_whole_op(case):
    _, op, inputs, weights, degrees = case
    check_tiles(op, inputs, weights, degrees)


def test_tiles_read_the_dilated_halo():
    """A height tile of a 3x3 'same' convolution at rate 4 reads 4 rows above and below its own."""
    op = Conv2DOp(padding="same", dilation=(4, 4))
    shapes = par.TileShapes(((2, 12, 12, 3),), ((3, 3, 3, 5),), ((2, 12, 12, 5),))
    tile = op.tile(shapes, ((0, 4, 0, 0), (2, 8, 12, 5)))
    assert tile.inputs == (((0, 0, 0, 0), (2, 12, 12, 3)),)
    assert tile.get("padding") == ((0, 0), (4, 4))
    tile = op.tile(shapes, ((0, 0, 0, 0), (2, 3, 12, 5)))
    assert tile.inputs == (((0, 0, 0, 0), (2, 7, 12, 3)),) and tile.get("padding") == ((4, 0), (4, 4))


def test_functional_form():
    x = rand(2, 9, 8, 3).astype("float32")
    k = rand(3, 3, 3, 4).astype("float32")
    b = rand(4).astype("float32")
    y = conv2d(x, k, b, padding="same", activation="relu", dilation_rate=(2, 3))
    np.testing.assert_allclose(y, conv2d_reference(x, k, b, (1, 1), "same", "relu", (2, 3)), rtol=1e-4, atol=1e-5)
    z = conv2d(KerasTensor((None, 32, 32, 3)), Variable("k", (3, 3, 3, 8)), padding="same", dilation_rate=6)
    assert z.shape == (None, 32, 32, 8) and z.node.op == Conv2DOp(padding="same", dilation=(6, 6))


def test_strides_with_dilation_are_refused():
    with pytest.raises(ValueError, match=r"conv2d: `strides > 1` not supported in conjunction with `dilation_rate "
                                         r"> 1` \(as in Keras\)\. Received: strides=\(1, 2\) and dilation_rate="
                                         r"\(2, 2\)\. Use strides=1"):
        Conv2DOp(strides=(1, 2), dilation=(2, 2)).output_specs(specs([rand(1, 8, 8, 1)]), specs([rand(3, 3, 1, 1)]))
