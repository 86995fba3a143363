"""The image augmentation ops with backend "cuda" (device arrays, under the simulator) against backend "cpu":
every affine kind in channels-last and channels-first (a transposed device view), the resize family with
its source window, and the value shifts, forward and backward, in training and inference."""

import numpy as np
import pytest
from test_ops_cuda import check_cuda

from flexflow_keras.ops.augment import ImageAffineOp, ImageResizeOp, ImageValueOp

IMAGES = np.random.default_rng(4).uniform(0, 1, (3, 6, 7, 2))


@pytest.mark.parametrize("channels_first", [False, True])
@pytest.mark.parametrize("kind,ranges", [("flip", ((1,), (1,))), ("rotation", ((-0.2, 0.2),)),
                                         ("zoom", ((-0.3, 0.3), (0.1, 0.2))), ("translation", ((-0.2, 0.2),) * 2)])
def test_affine_ops(kind, ranges, channels_first):
    x = IMAGES.transpose(0, 3, 1, 2).copy() if channels_first else IMAGES
    for training in (True, False):
        op = ImageAffineOp(kind=kind, seed=2, channels_first=channels_first, ranges=ranges,
                           interpolation="nearest" if kind == "flip" else "bilinear", fill_mode="reflect")
        check_cuda(op, [x], training=training, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kind,size,crop", [("resize", (4, 9), False), ("resize", (5, 5), True),
                                            ("center_crop", (4, 4), False), ("center_crop", (8, 8), False),
                                            ("random_crop", (4, 5), False)])
def test_resize_ops(kind, size, crop):
    for training in (True, False):
        check_cuda(ImageResizeOp(kind=kind, seed=3, size=size, crop_to_aspect_ratio=crop), [IMAGES],
                   training=training, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kind,factors", [("contrast", (0.5, 1.5)), ("brightness", (-0.2, 0.2))])
def test_value_ops(kind, factors):
    check_cuda(ImageValueOp(kind=kind, seed=4, factor_range=factors, value_range=(0.0, 1.0)), [IMAGES],
               training=True, rtol=1e-6, atol=1e-7)
