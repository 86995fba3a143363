"""Image augmentation ops: `ImageAffineOp` (RandomFlip, RandomRotation, RandomZoom, RandomTranslation),
`ImageValueOp` (RandomContrast, RandomBrightness) and `ImageResizeOp` (Resizing, CenterCrop,
RandomCrop), Keras 3's formulas.

The first two are the identity in inference (``ctx.training`` False); `ImageResizeOp` always resizes
or crops (only RandomCrop's window is random, in training). In training, image s of the global batch
draws its parameters from counter-based uniforms of (ctx.seed, ctx.step, the op's seed, s), as
`DropoutOp`'s mask does, so every data-parallel split transforms an image as the whole batch would; the
parallel rule is the sample dim only (a transform moves pixels across the image). The per-image
parameters (an affine matrix, a factor, a delta) are computed here on the host; the kernels
(`kernels.augment`) resample or shift. Images are (N, H, W, C), or (N, C, H, W) with `channels_first`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import kernel
from flexflow_keras.ops.base import Op
from flexflow_keras.ops.graph import TensorSpec
from flexflow_keras.ops.noise import _identity_backward, _identity_forward
from kernels import augment as kaug
from kernels import shape as kshape
from kernels.dropout import dropout_key

AFFINE_KINDS = ("flip", "rotation", "zoom", "translation")
VALUE_KINDS = ("contrast", "brightness")


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def uniforms(key: int, first: int, rows: int, count: int) -> np.ndarray:
    """(rows, count) uniforms in [0, 1): entry (r, j) is a pure function of (key, first + r, j)."""
    with np.errstate(over="ignore"):
        s = np.arange(first, first + rows, dtype=np.uint64)[:, None]
        z = _mix(np.uint64(key) ^ s) + np.arange(count, dtype=np.uint64)[None, :]
        z = _mix(z)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def _images(who: str, inputs, weights):
    if len(inputs) != 1 or weights:
        raise ShapeError(f"{who} takes 1 input and no weights, received {len(inputs)} inputs and "
                         f"{len(weights)} weights.")
    if len(inputs[0].shape) != 4:
        raise ShapeError(f"{who} expects a batch of images (batch, height, width, channels), received shape "
                         f"{tuple(inputs[0].shape)}.")
    return inputs[0]


TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)


def _span(lo_hi, u):
    lo, hi = lo_hi
    return lo + (hi - lo) * u


@dataclass(frozen=True)
class _ImageOp(Op):
    """Shared by the image ops: one input of images, identity in inference, split along the batch only."""

    kind: str = ""
    seed: int = 0
    channels_first: bool = False

    def output_specs(self, inputs, weights):
        return (_images(f"{self.type_name} ({self.kind})", inputs, weights),)

    def parallel_space(self, inputs, weights):
        extents = tuple(inputs[0].shape)
        return par.ParallelSpace(par.sample_only(extents, f"{self.type_name} ({self.kind})"), extents)

    def tile(self, shapes, out_box, part=0, parts=1):
        return par.default_tile(shapes, out_box)

    def _check(self, name: str, allowed) -> None:
        value = getattr(self, name)
        if value not in allowed:
            raise ValueError(f"{self.type_name}: {name} must be one of {allowed}, received {value!r}.")

    def _draws(self, ctx, rows: int, count: int) -> np.ndarray:
        return uniforms(dropout_key(ctx.seed, ctx.step, self.seed), ctx.batch_offset, rows, count)

    def saved_specs(self, inputs, weights):
        """Channels-first images go through channels-last buffers (the kernels' layout): the input, the
        output (the output gradient in backward) and the input gradient."""
        if not self.channels_first:
            return ()
        x, y = inputs[0], self.output_specs(inputs, weights)[0]
        nhwc = [TensorSpec(tuple(spec.shape[i] for i in TO_NHWC), spec.dtype) for spec in (x, y)]
        return (nhwc[0], nhwc[1], nhwc[0])

    def _forward_nhwc(self, ctx, x, y, saved, run) -> None:
        """run(x, y) on channels-last views of the input and output."""
        if not self.channels_first:
            run(x, y)
            return
        move = kernel(kshape, "transpose_forward", ctx)
        move(x, TO_NHWC, saved[0])
        run(saved[0], saved[1])
        move(saved[1], TO_NCHW, y)

    def _backward_nhwc(self, ctx, dy, dx, saved, run) -> None:
        """run(x, dy, dx, accumulate) on channels-last views (x: the forward's input)."""
        if not self.channels_first:
            run(None, dy, dx, ctx.acc_input(0))
            return
        kernel(kshape, "transpose_forward", ctx)(dy, TO_NHWC, saved[1])
        run(saved[0], saved[1], saved[2], False)
        kernel(kshape, "transpose_backward", ctx)(saved[2], TO_NHWC, dx, ctx.acc_input(0))


@dataclass(frozen=True)
class ImageAffineOp(_ImageOp):
    """A random affine resampling per image in training.

    Attributes:
        kind: "flip" (`ranges`: ((horizontal,), (vertical,)) as 0/1), "rotation" (`ranges`: ((lower,
            upper),) in turns), "zoom" (((h_lower, h_upper), (w_lower, w_upper)); no w range: the height's
            zoom), "translation" (((h_lower, h_upper), (w_lower, w_upper)) as fractions of the size).
        interpolation: "nearest" or "bilinear". fill_mode: one of `kernels.augment.FILL_MODES`.
        fill_value: what CONSTANT fills with.
    """

    type_name: ClassVar[str] = "image_affine"
    ranges: tuple = ()
    interpolation: str = "bilinear"
    fill_mode: str = "reflect"
    fill_value: float = 0.0

    def __post_init__(self):
        self._check("kind", AFFINE_KINDS)
        self._check("interpolation", kaug.INTERPOLATIONS)
        self._check("fill_mode", kaug.FILL_MODES)

    def matrices(self, ctx, rows: int, height: int, width: int) -> np.ndarray:
        """(rows, 6) float64: each image's output -> input matrix (Keras 3's)."""
        u = self._draws(ctx, rows, 2)
        m = np.zeros((rows, 6))
        m[:, 0] = m[:, 4] = 1.0
        if self.kind == "flip":
            (horizontal,), (vertical,) = self.ranges
            fx = (u[:, 0] < 0.5) & bool(horizontal)
            fy = (u[:, 1] < 0.5) & bool(vertical)
            m[:, 0] = np.where(fx, -1.0, 1.0)
            m[:, 2] = np.where(fx, width - 1.0, 0.0)
            m[:, 4] = np.where(fy, -1.0, 1.0)
            m[:, 5] = np.where(fy, height - 1.0, 0.0)
        elif self.kind == "rotation":
            angle = np.deg2rad(_span(self.ranges[0], u[:, 0]) * 360.0)
            cos, sin = np.cos(angle), np.sin(angle)
            cx, cy = 0.5 * (width - 1), 0.5 * (height - 1)
            m[:, 0], m[:, 1], m[:, 3], m[:, 4] = cos, -sin, sin, cos
            m[:, 2] = cx - cx * cos + cy * sin
            m[:, 5] = cy - cx * sin - cy * cos
        elif self.kind == "zoom":
            zy = 1.0 + _span(self.ranges[0], u[:, 0])
            zx = 1.0 + _span(self.ranges[1], u[:, 1]) if len(self.ranges) > 1 else zy
            m[:, 0], m[:, 4] = zx, zy
            m[:, 2] = (width - 1.0) / 2.0 * (1.0 - zx)
            m[:, 5] = (height - 1.0) / 2.0 * (1.0 - zy)
        else:  # translation
            m[:, 5] = -_span(self.ranges[0], u[:, 0]) * height
            m[:, 2] = -_span(self.ranges[1], u[:, 1]) * width
        return m

    def _geometry(self, x):
        shape = tuple(x.shape)
        return (shape[2], shape[3]) if self.channels_first else (shape[1], shape[2])

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        if not ctx.training:
            _identity_forward(ctx, inputs, outputs)
            return
        h, w = self._geometry(inputs[0])
        mats = self.matrices(ctx, inputs[0].shape[0], h, w)
        fwd = kernel(kaug, "affine_forward", ctx)
        self._forward_nhwc(ctx, inputs[0], outputs[0], saved, lambda x, y: fwd(
            x, y, mats, self.interpolation == "bilinear", kaug.FILL_MODES.index(self.fill_mode),
            float(self.fill_value)))

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is None:
            return
        if not ctx.training:
            _identity_backward(ctx, grad_outputs, grad_inputs)
            return
        h, w = self._geometry(inputs[0])
        mats = self.matrices(ctx, inputs[0].shape[0], h, w)
        bwd = kernel(kaug, "affine_backward", ctx)
        self._backward_nhwc(ctx, grad_outputs[0], grad_inputs[0], saved, lambda x, dy, dx, acc: bwd(
            dy, mats, dx, self.interpolation == "bilinear", kaug.FILL_MODES.index(self.fill_mode), acc))


@dataclass(frozen=True)
class ImageValueOp(_ImageOp):
    """A random per-image contrast or brightness change in training, clipped to `value_range`.

    Attributes:
        kind: "contrast" (`factor_range`: the factor's (lower, upper), about each channel's mean) or
            "brightness" (`factor_range`: the delta's (lower, upper) as fractions of the value range).
        value_range: (low, high) the outputs are clipped to.
    """

    type_name: ClassVar[str] = "image_value"
    factor_range: tuple[float, float] = (0.0, 0.0)
    value_range: tuple[float, float] = (0.0, 255.0)

    def __post_init__(self):
        self._check("kind", VALUE_KINDS)

    def params(self, ctx, rows: int) -> np.ndarray:
        """(rows,) float64: each image's contrast factor or brightness delta."""
        v = _span(self.factor_range, self._draws(ctx, rows, 1)[:, 0])
        if self.kind == "brightness":
            v = v * (self.value_range[1] - self.value_range[0])
        return v

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        if not ctx.training:
            _identity_forward(ctx, inputs, outputs)
            return
        p = self.params(ctx, inputs[0].shape[0])
        lo, hi = (float(v) for v in self.value_range)
        fwd = kernel(kaug, f"{self.kind}_forward", ctx)
        self._forward_nhwc(ctx, inputs[0], outputs[0], saved, lambda x, y: fwd(x, y, p, lo, hi))

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is None:
            return
        if not ctx.training:
            _identity_backward(ctx, grad_outputs, grad_inputs)
            return
        p = self.params(ctx, inputs[0].shape[0])
        lo, hi = (float(v) for v in self.value_range)
        bwd = kernel(kaug, f"{self.kind}_backward", ctx)
        self._backward_nhwc(ctx, grad_outputs[0], grad_inputs[0], saved, lambda x, dy, dx, acc: bwd(
            inputs[0] if x is None else x, dy, p, dx, lo, hi, acc))


def _line(n_in: int, n_out: int) -> tuple[float, float]:
    """(scale, offset) of tf.image.resize's source coordinate ``(j + 0.5) * in / out - 0.5`` (Resizing's
    nearest runs as gathers instead: layers/image_augmentation.py)."""
    s = n_in / n_out
    return s, 0.5 * s - 0.5


def aspect_window(height: int, width: int, size) -> tuple[int, int, int, int]:
    """(top, left, height, width) of the largest centred window of `size`'s aspect ratio (Keras'
    smart_resize and crop_to_aspect_ratio)."""
    th, tw = size
    ch = max(min(height, int(float(width * th) / tw)), 1)
    cw = max(min(width, int(float(height * tw) / th)), 1)
    return int(float(height - ch) / 2), int(float(width - cw) / 2), ch, cw


RESIZE_KINDS = ("resize", "center_crop", "random_crop")


@dataclass(frozen=True)
class ImageResizeOp(_ImageOp):
    """Images to `size` (height, width).

    Attributes:
        kind: "resize" (Resizing: the whole image, or with `crop_to_aspect_ratio` its largest centred
            window of the target's aspect ratio, resized as tf.image.resize does: half-pixel centres,
            edges clamped, no antialiasing); "center_crop" (CenterCrop: the centred window when the image
            is at least `size`, else the aspect window resized); "random_crop" (RandomCrop: in training, a
            window at a random offset per image when the image is larger than `size` in both dims; else
            the aspect window resized, as Keras documents for inference).
        interpolation: "bilinear" or "nearest" (crops are exact).
    """

    type_name: ClassVar[str] = "image_resize"
    size: tuple[int, int] = (1, 1)
    interpolation: str = "bilinear"
    crop_to_aspect_ratio: bool = False

    def __post_init__(self):
        self._check("kind", RESIZE_KINDS)
        self._check("interpolation", kaug.INTERPOLATIONS)

    def _hw(self, spec):
        shape = tuple(spec.shape)
        return (shape[2], shape[3]) if self.channels_first else (shape[1], shape[2])

    def output_specs(self, inputs, weights):
        x = _images(f"{self.type_name} ({self.kind})", inputs, weights)
        th, tw = self.size  # whatever the input's height and width, open ones too (read from the data at run time)
        shape = (x.shape[0], x.shape[1], th, tw) if self.channels_first else (x.shape[0], th, tw, x.shape[3])
        return (TensorSpec(shape, x.dtype),)

    def plan(self, ctx, rows: int, height: int, width: int):
        """(mats, bilinear, window): the per-image matrices, the interpolation, the source window."""
        th, tw = self.size
        m = np.zeros((rows, 6))
        m[:, 0] = m[:, 4] = 1.0
        crop = None
        if self.kind == "random_crop" and ctx.training and height > th and width > tw:
            u = self._draws(ctx, rows, 2)
            crop = (np.minimum(np.floor(u[:, 0] * (height - th + 1)), height - th),
                    np.minimum(np.floor(u[:, 1] * (width - tw + 1)), width - tw))
        elif self.kind == "center_crop" and height >= th and width >= tw:
            crop = ((height - th) // 2, (width - tw) // 2)
        if crop is not None:
            m[:, 5], m[:, 2] = crop
            return m, False, None
        window = (aspect_window(height, width, self.size) if self.kind != "resize" or self.crop_to_aspect_ratio
                  else (0, 0, height, width))
        bilinear = self.interpolation == "bilinear" or self.kind != "resize"
        (m[:, 4], m[:, 5]), (m[:, 0], m[:, 2]) = _line(window[2], th), _line(window[3], tw)
        return m, bilinear, window

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        h, w = self._hw(inputs[0])
        mats, bilinear, window = self.plan(ctx, inputs[0].shape[0], h, w)
        if window is not None and ctx.backend == "cpu":
            # a resize (not a crop): TensorFlow's float32 source coordinates, bit-equal to tf.image.resize (the
            # affine kernel's float64 ones move bilinear pixels by up to 1e-5); CUDA keeps the affine kernel
            self._forward_nhwc(ctx, inputs[0], outputs[0], saved, lambda x, y: kaug.resize_forward_cpu(
                x, y, bilinear, window))
            return
        fwd = kernel(kaug, "affine_forward", ctx)
        self._forward_nhwc(ctx, inputs[0], outputs[0], saved, lambda x, y: fwd(
            x, y, mats, bilinear, kaug.FILL_MODES.index("nearest"), 0.0, window))

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is None:
            return
        h, w = self._hw(inputs[0])
        mats, bilinear, window = self.plan(ctx, inputs[0].shape[0], h, w)
        bwd = kernel(kaug, "affine_backward", ctx)
        self._backward_nhwc(ctx, grad_outputs[0], grad_inputs[0], saved, lambda x, dy, dx, acc: bwd(
            dy, mats, dx, bilinear, kaug.FILL_MODES.index("nearest"), acc, window))


__all__ = ["ImageAffineOp", "ImageResizeOp", "ImageValueOp", "aspect_window", "uniforms"]
