"""Image augmentation and resizing layers (Keras 3): RandomFlip, RandomRotation, RandomZoom,
RandomTranslation, RandomContrast, RandomBrightness, RandomCrop, and Resizing and CenterCrop (which act
in training and inference alike).

In a model the random layers augment in training only: the recorded op follows the execution's mode (fit augments,
evaluate and predict pass the images through), and every image draws its own transform from the
layer's seed, the run's seed and the step (`ops/augment.py`), so the same seeds give the same
augmentation and a data-parallel split transforms each image as the whole batch would. Called on
arrays, as in ``dataset.map(lambda x, y: (augment(x), y))``, they augment unless ``training=False``
(Keras 3's default for these layers), with new draws at every call. A single image (height, width,
channels) is accepted on arrays, as in Keras. Inputs are cast to float32.
"""

from __future__ import annotations

import numbers

import numpy as np

from flexflow_keras import backend
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.ops import functional as F
from flexflow_keras.ops.augment import ImageAffineOp, ImageResizeOp, ImageValueOp
from flexflow_keras.ops.base import apply_op
from flexflow_keras.utils import rng
from kernels.augment import FILL_MODES, INTERPOLATIONS


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _range(layer, name: str, value, low: float, high: float, symmetric: bool = True) -> tuple[float, float]:
    """A factor as (lower, upper): a number f is (-f, f) (`symmetric`) or (f, f); a pair is itself."""
    if _is_number(value):
        pair = (-abs(float(value)), abs(float(value))) if symmetric else (float(value), float(value))
    elif isinstance(value, (tuple, list)) and len(value) == 2 and all(_is_number(v) for v in value):
        pair = (float(value[0]), float(value[1]))
    else:
        raise ValueError(f"{_args.who(layer)} expects {name} to be a number or a (lower, upper) pair, received "
                         f"{name}={value!r}.")
    if pair[0] > pair[1] or not (low <= pair[0] and pair[1] <= high):
        raise ValueError(f"{_args.who(layer)} expects {name} within [{low}, {high}] with lower <= upper, received "
                         f"{name}={value!r}.")
    return pair


def _choice(layer, name: str, value, allowed) -> str:
    if value not in allowed:
        raise ValueError(f"{_args.who(layer)}: unknown {name} {value!r}; expected one of {list(allowed)}.")
    return value


class _ImageAugmentation(Layer):
    """Shared by the augmentation layers: the seed, the data format, the training rule, eager calls."""

    _float_math = True
    _takes_unbatched_images = True  # an eager call takes one (height, width, channels) image; so does a
    # Sequential holding the layer (models/sequential.py)

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        # Keras' random layers make a SeedGenerator (a Python `random` draw, `utils/rng.default_seed`);
        # Resizing and CenterCrop make none
        self._seed = int(seed) if seed is not None else rng.default_seed(getattr(self, "_random", True))
        self.data_format = backend.standardize_data_format(data_format, _args.who(self))
        self._eager_calls = 0

    def call(self, inputs, training=True):  # each layer's _op builds its op
        if F._symbolic(inputs):
            if len(inputs.shape) != 4:
                raise ValueError(f"{_args.who(self)} expects a batch of images (batch, height, width, channels) "
                                 f"in a model, received shape {tuple(inputs.shape)}.")
            return apply_op(self._op(), [F._tensor(inputs, True)])
        x = np.asarray(inputs, np.float32)
        single = x.ndim == 3
        if x.ndim not in (3, 4):
            raise ValueError(f"{_args.who(self)} expects images of rank 3 or 4, received shape {x.shape}.")
        self._eager_calls += 1  # every call draws anew, as Keras' seed generator does; a decoder process
        seed = self._eager_calls + (rng.process_stream() << 32)  # running a dataset's map draws its own
        out = apply_op(self._op(), [x[None] if single else x], training=training is not False, seed=seed)
        return out[0] if single else out

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "seed": self.seed, "data_format": self.data_format}


class _Resampling(_ImageAugmentation):
    """The affine layers' shared arguments: fill_mode, interpolation, fill_value."""

    def __init__(self, fill_mode="reflect", interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.fill_mode = _choice(self, "fill_mode", fill_mode, FILL_MODES)
        self.interpolation = _choice(self, "interpolation", interpolation, INTERPOLATIONS)
        self.fill_value = float(fill_value)

    def _affine(self, kind: str, ranges) -> ImageAffineOp:
        return ImageAffineOp(kind=kind, seed=self._seed, channels_first=self.data_format == "channels_first",
                             ranges=tuple(ranges), interpolation=self.interpolation, fill_mode=self.fill_mode,
                             fill_value=self.fill_value)

    def get_config(self):
        return {**super().get_config(), "fill_mode": self.fill_mode, "interpolation": self.interpolation,
                "fill_value": self.fill_value}


class RandomFlip(_ImageAugmentation):
    """Flip each image horizontally and/or vertically with probability 1/2 (each direction on its own).

    Args:
        mode: "horizontal", "vertical" or "horizontal_and_vertical".
        seed: integer seed (drawn from the framework generator when None).
    """

    MODES = ("horizontal", "vertical", "horizontal_and_vertical")

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.mode = _choice(self, "mode", mode, self.MODES)

    def _op(self):
        ranges = ((int("horizontal" in self.mode),), (int("vertical" in self.mode),))
        return ImageAffineOp(kind="flip", seed=self._seed, channels_first=self.data_format == "channels_first",
                             ranges=ranges, interpolation="nearest", fill_mode="nearest")

    def get_config(self):
        return {**super().get_config(), "mode": self.mode}


class RandomRotation(_Resampling):
    """Rotate each image about its centre by a random angle.

    Args:
        factor: a fraction of a full turn: f rotates by an angle in [-f * 360, f * 360] degrees, (lower,
            upper) in [lower * 360, upper * 360]. Positive angles turn counter-clockwise.
        fill_mode: "reflect", "wrap", "constant" or "nearest" (outside the input).
        interpolation: "bilinear" or "nearest". fill_value: what "constant" fills with.
    """

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None, fill_value=0.0,
                 data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.factor = factor
        self._factor = _range(self, "factor", factor, -1.0, 1.0)

    def _op(self):
        return self._affine("rotation", (self._factor,))

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class RandomZoom(_Resampling):
    """Zoom each image in or out about its centre by a random factor.

    Args:
        height_factor: f zooms the height by 1 + [-f, f]; (lower, upper) by 1 + [lower, upper]. Positive
            values zoom out, negative zoom in (each >= -1).
        width_factor: the same for the width; None keeps the aspect ratio (the height's zoom).
        fill_mode, interpolation, fill_value: as RandomRotation.
    """

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._ranges = [_range(self, "height_factor", height_factor, -1.0, float("inf"))]
        if width_factor is not None:
            self._ranges.append(_range(self, "width_factor", width_factor, -1.0, float("inf")))

    def _op(self):
        return self._affine("zoom", self._ranges)

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor, "width_factor": self.width_factor}


class RandomTranslation(_Resampling):
    """Shift each image by a random fraction of its height and width.

    Args:
        height_factor: f shifts by [-f, f] of the height ((lower, upper) likewise; within [-1, 1]);
            positive values shift down.
        width_factor: the same for the width; positive values shift right.
        fill_mode, interpolation, fill_value: as RandomRotation.
    """

    def __init__(self, height_factor, width_factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._ranges = (_range(self, "height_factor", height_factor, -1.0, 1.0),
                        _range(self, "width_factor", width_factor, -1.0, 1.0))

    def _op(self):
        return self._affine("translation", self._ranges)

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor, "width_factor": self.width_factor}


class _ValueShift(_ImageAugmentation):
    def __init__(self, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if (not isinstance(value_range, (tuple, list)) or len(value_range) != 2
                or not all(_is_number(v) for v in value_range) or value_range[0] >= value_range[1]):
            raise ValueError(f"{_args.who(self)} expects value_range to be a (low, high) pair with low < high, "
                             f"received value_range={value_range!r}.")
        self.value_range = (float(value_range[0]), float(value_range[1]))

    def get_config(self):
        return {**super().get_config(), "value_range": list(self.value_range)}


class RandomContrast(_ValueShift):
    """Scale each image's contrast about its channels' means by a random factor, clipped to value_range.

    Args:
        factor: f picks the factor in [1 - f, 1 + f]; (lower, upper) in [1 - lower, 1 + upper]; each in
            [0, 1].
        value_range: (low, high) of the images' values (default (0, 255)).
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(value_range=value_range, seed=seed, **kwargs)
        self.factor = factor
        lower, upper = _range(self, "factor", factor, 0.0, 1.0, symmetric=False)
        self._factor = (1.0 - lower, 1.0 + upper)

    def _op(self):
        return ImageValueOp(kind="contrast", seed=self._seed, channels_first=self.data_format == "channels_first",
                            factor_range=self._factor, value_range=self.value_range)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class RandomBrightness(_ValueShift):
    """Add a random delta to each image's values, clipped to value_range.

    Args:
        factor: f adds a delta in [-f, f] of the value range; (lower, upper) in [lower, upper] of it; each
            within [-1, 1].
        value_range: (low, high) of the images' values (default (0, 255)).
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(value_range=value_range, seed=seed, **kwargs)
        self.factor = factor
        self._factor = _range(self, "factor", factor, -1.0, 1.0)

    def _op(self):
        return ImageValueOp(kind="brightness", seed=self._seed,
                            channels_first=self.data_format == "channels_first", factor_range=self._factor,
                            value_range=self.value_range)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class _ToSize(_ImageAugmentation):
    """The layers that give images a new (height, width)."""

    _random = False  # Resizing and CenterCrop take no seed (an unknown argument, as in Keras)

    def __init__(self, height, width, data_format=None, **kwargs):
        seed = kwargs.pop("seed", None) if self._random else None
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        for name, v in (("height", height), ("width", width)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"{_args.who(self)} expects {name} to be a positive integer, received {name}={v!r}.")
        self.height, self.width = int(height), int(width)

    def _resize(self, kind: str, interpolation="bilinear", crop_to_aspect_ratio=False) -> ImageResizeOp:
        return ImageResizeOp(kind=kind, seed=self._seed, channels_first=self.data_format == "channels_first",
                             size=(self.height, self.width), interpolation=interpolation,
                             crop_to_aspect_ratio=crop_to_aspect_ratio)

    def compute_output_shape(self, input_shape):
        s = list(input_shape)
        if self.data_format == "channels_first":
            s[-2:] = [self.height, self.width]
        else:
            s[-3:-1] = [self.height, self.width]
        return tuple(s)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width}


class Resizing(_ToSize):
    """Resize images to (height, width), as tf.image.resize (half-pixel centres, no antialiasing).

    Args:
        height, width: the output size.
        interpolation: "bilinear" or "nearest".
        crop_to_aspect_ratio: resize the largest centred window of the target's aspect ratio instead of
            the whole image (no distortion).
    """

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False, pad_to_aspect_ratio=False,
                 fill_mode="constant", fill_value=0.0, antialias=False, data_format=None, **kwargs):
        super().__init__(height, width, data_format=data_format, **kwargs)
        if interpolation in ("bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic"):
            raise ValueError(f"{_args.who(self)}: interpolation={interpolation!r} is not implemented by "
                             f"flexflow_keras yet; use 'bilinear' or 'nearest'.")
        self.interpolation = _choice(self, "interpolation", interpolation, INTERPOLATIONS)
        if pad_to_aspect_ratio or antialias:
            raise ValueError(f"{_args.who(self)}: {'pad_to_aspect_ratio' if pad_to_aspect_ratio else 'antialias'}"
                             f"=True is not implemented by flexflow_keras yet; crop_to_aspect_ratio=True keeps the "
                             f"aspect ratio by cropping instead.")
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.fill_mode, self.fill_value = fill_mode, fill_value  # used only with pad_to_aspect_ratio

    def _op(self):
        return self._resize("resize", self.interpolation, self.crop_to_aspect_ratio)

    def _convert_eager(self, inputs):
        # Keras 3 gives an eager call on integer images (uint8 pixels) its result rounded and saturated back
        # to that dtype; a model's graph and a tf.data map compute in float
        from flexflow_keras.layers import tf_graph_call

        dtype = None
        if not isinstance(inputs, (list, tuple, dict)) and not tf_graph_call.in_pipeline():
            dtype = np.asarray(inputs).dtype
        self._eager_int_dtype = dtype if dtype is not None and dtype.kind in "iu" else None
        return super()._convert_eager(inputs)

    def call(self, inputs, training=True):
        out = self._resized(inputs, training)
        dtype = self.__dict__.pop("_eager_int_dtype", None)
        if dtype is None or F._symbolic(out):
            return out
        info = np.iinfo(dtype)
        return np.clip(np.round(np.asarray(out)), info.min, info.max).astype(dtype)

    def _resized(self, inputs, training):
        if self.interpolation != "nearest":
            return super().call(inputs, training)
        # nearest: two gathers of the pixels TensorFlow picks (float32 floor((j + 0.5) * in / out)), which no
        # affine line through the resampler reproduces for every size pair
        from flexflow_keras.ops.image import _nearest

        cf = self.data_format == "channels_first"
        if F._symbolic(inputs):
            if len(inputs.shape) != 4:
                raise ValueError(f"{_args.who(self)} expects a batch of images (batch, height, width, channels) "
                                 f"in a model, received shape {tuple(inputs.shape)}.")
            return _nearest(inputs, (self.height, self.width), cf, self.crop_to_aspect_ratio)
        x = np.asarray(inputs, np.float32)
        if x.ndim not in (3, 4):
            raise ValueError(f"{_args.who(self)} expects images of rank 3 or 4, received shape {x.shape}.")
        out = np.asarray(_nearest(x if x.ndim == 4 else x[None], (self.height, self.width), cf,
                                  self.crop_to_aspect_ratio))
        return out if x.ndim == 4 else out[0]

    def get_config(self):
        config = {**super().get_config(), "interpolation": self.interpolation,
                  "crop_to_aspect_ratio": self.crop_to_aspect_ratio}
        config.pop("seed")
        return config


class CenterCrop(_ToSize):
    """Crop the centre (height, width) window of each image; smaller images are first cropped to the
    target's aspect ratio and resized (Keras' smart_resize)."""

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(height, width, data_format=data_format, **kwargs)

    def _op(self):
        return self._resize("center_crop")

    def get_config(self):
        config = super().get_config()
        config.pop("seed")
        return config


class RandomCrop(_ToSize):
    """In training, crop a (height, width) window at a random offset of each image (larger than it in both
    dims); in inference, and for smaller images, crop the largest centred window of the target's aspect
    ratio and resize it (Keras' documented behaviour)."""

    _random = True

    def __init__(self, height, width, seed=None, data_format=None, **kwargs):
        super().__init__(height, width, data_format=data_format, seed=seed, **kwargs)
        if seed is None:  # Keras' RandomCrop draws its `seed` attribute and then its SeedGenerator's
            rng.keras_draw()

    def _op(self):
        return self._resize("random_crop")

    def get_config(self):
        # Keras' RandomCrop keeps the seed it drew for seed=None as its `seed`, so a clone (from_config)
        # draws none from Python's random; ours is the framework seed it crops with
        config = super().get_config()
        if config["seed"] is None:
            config["seed"] = self._seed
        return config


__all__ = ["CenterCrop", "RandomBrightness", "RandomContrast", "RandomCrop", "RandomFlip", "RandomRotation",
           "RandomTranslation", "RandomZoom", "Resizing"]
