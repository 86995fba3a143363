"""`keras.preprocessing.image` (Keras 2): `ImageDataGenerator` (random affine transforms, flips, channel
and brightness shifts, normalization learned by `fit`) with `flow`, `flow_from_directory` and `flow_from_dataframe`, and the
file helpers `load_img`, `img_to_array`, `array_to_img`, `save_img`.

The transforms follow Keras 2 (keras-preprocessing 1.1.2, as Keras 3's legacy generator): one matrix composed of rotation, shift, shear
and zoom about the image centre, resampled by `scipy.ndimage.affine_transform` per channel with
`interpolation_order` and `fill_mode`; then `standardize` applies `preprocessing_function`, `rescale`,
sample-wise and feature-wise centring / std normalization and ZCA whitening, in that order.
"""

from __future__ import annotations

import logging

import numpy as np

from flexflow_keras.preprocessing.dataframe_iterator import DataFrameIterator
from flexflow_keras.preprocessing.image_iterators import DirectoryIterator, Iterator, NumpyArrayIterator
from flexflow_keras.preprocessing.image_utils import (
    array_to_img,
    check_data_format,
    img_to_array,
    load_img,
    save_img,
)

log = logging.getLogger("flexflow_keras")
_FILL_MODES = ("constant", "nearest", "reflect", "wrap")


def _ndimage():
    try:
        from scipy import ndimage
    except ImportError:
        raise ImportError("ImageDataGenerator's rotation/shift/shear/zoom need SciPy (as in Keras 2): "
                          "pip install scipy") from None
    return ndimage


def _shift_range(who: str, value):
    if isinstance(value, (list, tuple, np.ndarray)):
        return list(value)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"ImageDataGenerator expects {who} to be a float, an int or a list of ints, received "
                         f"{who}={value!r}.")
    return value


def _offset_center(matrix: np.ndarray, h: int, w: int) -> np.ndarray:
    """`matrix` applied about the image centre rather than the origin."""
    ox, oy = float(h) / 2 - 0.5, float(w) / 2 - 0.5  # the centre of the pixel grid (0-based)
    to_centre = np.array([[1, 0, ox], [0, 1, oy], [0, 0, 1]])
    back = np.array([[1, 0, -ox], [0, 1, -oy], [0, 0, 1]])
    return to_centre @ matrix @ back


def apply_affine_transform(x, theta=0, tx=0, ty=0, shear=0, zx=1, zy=1, row_axis=0, col_axis=1, channel_axis=2,
                           fill_mode="nearest", cval=0.0, order=1) -> np.ndarray:
    """Rotate (degrees), shift (pixels along rows `tx` and columns `ty`), shear (degrees) and zoom one image.

    Args:
        x: a 3-D image.
        theta, tx, ty, shear, zx, zy: the transform's parameters (0/1 = none).
        row_axis, col_axis, channel_axis: the axes of `x`.
        fill_mode, cval: how points outside the image are filled (see `ImageDataGenerator`).
        order: spline interpolation order (1 = bilinear).
    """
    matrix = np.eye(3)
    if theta:
        t = np.deg2rad(theta)
        matrix = matrix @ np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])
    if tx or ty:
        matrix = matrix @ np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]])
    if shear:
        s = np.deg2rad(shear)
        matrix = matrix @ np.array([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]])
    if zx != 1 or zy != 1:
        matrix = matrix @ np.array([[zx, 0, 0], [0, zy, 0], [0, 0, 1]])
    if not (theta or tx or ty or shear or zx != 1 or zy != 1):
        return x
    ndimage = _ndimage()
    matrix = _offset_center(matrix, x.shape[row_axis], x.shape[col_axis])
    if col_axis > row_axis:
        # The matrix is built for (x, y) coordinates and arrays index (row, col): conjugate it by the swap
        # (keras-preprocessing 1.1.2, what Keras 2.3 installs and Keras 3's legacy generator keeps).
        matrix[:, [0, 1]] = matrix[:, [1, 0]]
        matrix[[0, 1]] = matrix[[1, 0]]
    planes = np.moveaxis(x, channel_axis, 0)
    out = np.stack([ndimage.affine_transform(p, matrix[:2, :2], matrix[:2, 2], order=order, mode=fill_mode,
                                             cval=cval) for p in planes], axis=0)
    return np.moveaxis(out, 0, channel_axis)


class ImageDataGenerator:
    """Batches of augmented, normalized images (Keras 2's `ImageDataGenerator`).

    Args:
        featurewise_center: subtract the per-channel mean learned by `fit`.
        samplewise_center: subtract each image's mean.
        featurewise_std_normalization: divide by the per-channel std learned by `fit` (+1e-6).
        samplewise_std_normalization: divide each image by its std (+1e-6).
        zca_whitening, zca_epsilon: ZCA whitening learned by `fit`.
        rotation_range: degrees; a rotation drawn uniformly in [-r, r].
        width_shift_range, height_shift_range: a float < 1 (fraction of the width/height), a float >= 1 or
            an int (pixels: uniform in [-v, v] for a float, a signed integer below v for an int), or a
            list of allowed pixel shifts (one is drawn, with a random sign).
        brightness_range: (low, high): pixel values multiplied by a factor drawn in it (clipped to 0..255).
        shear_range: degrees, counter-clockwise.
        zoom_range: a float z (zoom in [1-z, 1+z]) or [low, high].
        channel_shift_range: a shift drawn in [-v, v] added to every channel (clipped to the image's range).
        fill_mode: "constant", "nearest", "reflect" or "wrap" for points outside the image.
        cval: the fill value for "constant".
        horizontal_flip, vertical_flip: flip half the images.
        rescale: multiply every image by this (after the transforms).
        preprocessing_function: a function of one image, applied first in `standardize`.
        data_format: "channels_last" (default) or "channels_first".
        validation_split: fraction of the data kept for `subset="validation"`.
        interpolation_order: spline order of the affine resampling (1 = bilinear).
        dtype: dtype of the batches.

    Example:
        >>> gen = ImageDataGenerator(rotation_range=10, horizontal_flip=True, rescale=1 / 255)
        >>> model.fit(gen.flow(x, y, batch_size=32), epochs=1)
    """

    def __init__(self, featurewise_center=False, samplewise_center=False, featurewise_std_normalization=False,
                 samplewise_std_normalization=False, zca_whitening=False, zca_epsilon=1e-6, rotation_range=0,
                 width_shift_range=0.0, height_shift_range=0.0, brightness_range=None, shear_range=0.0,
                 zoom_range=0.0, channel_shift_range=0.0, fill_mode="nearest", cval=0.0, horizontal_flip=False,
                 vertical_flip=False, rescale=None, preprocessing_function=None, data_format=None,
                 validation_split=0.0, interpolation_order=1, dtype="float32"):
        if fill_mode not in _FILL_MODES:
            raise ValueError(f"ImageDataGenerator expects fill_mode in {_FILL_MODES}, received fill_mode={fill_mode!r}.")
        if not 0 <= float(validation_split) < 1:
            raise ValueError(f"ImageDataGenerator expects validation_split in [0, 1), received {validation_split!r}.")
        if np.isscalar(zoom_range):
            zoom_range = [1 - zoom_range, 1 + zoom_range]
        elif len(zoom_range) == 2:
            zoom_range = [zoom_range[0], zoom_range[1]]
        else:
            raise ValueError(f"ImageDataGenerator expects zoom_range to be a float or a [low, high] pair, received "
                             f"zoom_range={zoom_range!r}.")
        if brightness_range is not None and len(brightness_range) != 2:
            raise ValueError(f"ImageDataGenerator expects brightness_range to be a (low, high) pair, received "
                             f"brightness_range={brightness_range!r}.")
        self.featurewise_center = featurewise_center
        self.samplewise_center = samplewise_center
        self.featurewise_std_normalization = featurewise_std_normalization
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening = zca_whitening
        self.zca_epsilon = zca_epsilon
        self.rotation_range = rotation_range
        self.width_shift_range = _shift_range("width_shift_range", width_shift_range)
        self.height_shift_range = _shift_range("height_shift_range", height_shift_range)
        self.brightness_range = brightness_range
        self.shear_range = shear_range
        self.zoom_range = zoom_range
        self.channel_shift_range = channel_shift_range
        self.fill_mode = fill_mode
        self.cval = cval
        self.horizontal_flip = horizontal_flip
        self.vertical_flip = vertical_flip
        self.rescale = rescale
        self.preprocessing_function = preprocessing_function
        self.data_format = check_data_format("ImageDataGenerator", data_format)
        if self.data_format == "channels_first":
            self.channel_axis, self.row_axis, self.col_axis = 1, 2, 3
        else:
            self.channel_axis, self.row_axis, self.col_axis = 3, 1, 2
        self._validation_split = float(validation_split)
        self.interpolation_order = interpolation_order
        self.dtype = dtype
        self.mean = None
        self.std = None
        self.zca_whitening_matrix = None
        if zca_whitening and (featurewise_center is False or featurewise_std_normalization):
            log.warning("ImageDataGenerator: zca_whitening overrides featurewise_std_normalization and needs "
                        "featurewise_center; setting featurewise_center=True, featurewise_std_normalization=False.")
            self.featurewise_center = True
            self.featurewise_std_normalization = False

    @property
    def principal_components(self):
        """Keras 2's name of `zca_whitening_matrix`."""
        return self.zca_whitening_matrix

    # --- iterators -----------------------------------------------------------------------------------
    def flow(self, x, y=None, batch_size=32, shuffle=True, sample_weight=None, seed=None, save_to_dir=None,
             save_prefix="", save_format="png", subset=None) -> NumpyArrayIterator:
        """Batches ``(x, y[, sample_weight])`` of augmented images from arrays (see `NumpyArrayIterator`);
        `fit`, `fit_generator`, `evaluate` and `predict` take it directly."""
        return NumpyArrayIterator(x, y, self, batch_size=batch_size, shuffle=shuffle, sample_weight=sample_weight,
                                  seed=seed, data_format=self.data_format, save_to_dir=save_to_dir,
                                  save_prefix=save_prefix, save_format=save_format, subset=subset, dtype=self.dtype)

    def flow_from_directory(self, directory, target_size=(256, 256), color_mode="rgb", classes=None,
                            class_mode="categorical", batch_size=32, shuffle=True, seed=None, save_to_dir=None,
                            save_prefix="", save_format="png", follow_links=False, subset=None,
                            interpolation="nearest", keep_aspect_ratio=False) -> DirectoryIterator:
        """Batches of augmented images from a folder of class sub-folders (see `DirectoryIterator`)."""
        return DirectoryIterator(directory, self, target_size=target_size, color_mode=color_mode, classes=classes,
                                 class_mode=class_mode, batch_size=batch_size, shuffle=shuffle, seed=seed,
                                 data_format=self.data_format, save_to_dir=save_to_dir, save_prefix=save_prefix,
                                 save_format=save_format, follow_links=follow_links, subset=subset,
                                 interpolation=interpolation, keep_aspect_ratio=keep_aspect_ratio, dtype=self.dtype)

    def flow_from_dataframe(self, dataframe, directory=None, x_col="filename", y_col="class", weight_col=None,
                            target_size=(256, 256), color_mode="rgb", classes=None, class_mode="categorical",
                            batch_size=32, shuffle=True, seed=None, save_to_dir=None, save_prefix="",
                            save_format="png", subset=None, interpolation="nearest", validate_filenames=True,
                            **kwargs) -> DataFrameIterator:
        """Batches of augmented images named by a table's column, labels from its other columns (see
        `DataFrameIterator`). Keras 2's deprecated `has_ext`, `sort` and `drop_duplicates` are accepted
        and ignored, as Keras 2.3 did."""
        unknown = sorted(set(kwargs) - {"has_ext", "sort", "drop_duplicates"})
        if unknown:
            raise TypeError(f"flow_from_dataframe got unexpected keyword argument(s) {unknown}.")
        return DataFrameIterator(dataframe, directory, self, x_col=x_col, y_col=y_col, weight_col=weight_col,
                                 target_size=target_size, color_mode=color_mode, classes=classes,
                                 class_mode=class_mode, batch_size=batch_size, shuffle=shuffle, seed=seed,
                                 data_format=self.data_format, save_to_dir=save_to_dir, save_prefix=save_prefix,
                                 save_format=save_format, subset=subset, interpolation=interpolation,
                                 validate_filenames=validate_filenames, dtype=self.dtype)

    # --- normalization -------------------------------------------------------------------------------
    def standardize(self, x: np.ndarray) -> np.ndarray:
        """Normalize one image (or a batch) in place and return it, in Keras 2's order."""
        if self.preprocessing_function:
            x = self.preprocessing_function(x)
        if self.rescale:
            x *= self.rescale
        if self.samplewise_center:
            x -= np.mean(x, keepdims=True)
        if self.samplewise_std_normalization:
            x /= np.std(x, keepdims=True) + 1e-6
        if self.featurewise_center:
            if self.mean is None:
                log.warning("ImageDataGenerator has featurewise_center=True but was not fit on any data; call "
                            "fit(x_train) first.")
            else:
                x -= self.mean
        if self.featurewise_std_normalization:
            if self.std is None:
                log.warning("ImageDataGenerator has featurewise_std_normalization=True but was not fit on any "
                            "data; call fit(x_train) first.")
            else:
                x /= self.std + 1e-6
        if self.zca_whitening:
            if self.zca_whitening_matrix is None:
                log.warning("ImageDataGenerator has zca_whitening=True but was not fit on any data; call "
                            "fit(x_train) first.")
            else:
                flat = np.reshape(x, (-1, int(np.prod(x.shape[-3:]))))
                x = np.reshape(flat @ self.zca_whitening_matrix, x.shape)
        return x

    def fit(self, x, augment: bool = False, rounds: int = 1, seed=None) -> None:
        """Learn the feature-wise mean, std and ZCA matrix from sample images (after `rescale`).

        Args:
            x: images (samples, height, width, channels) (or channels first).
            augment: fit on randomly transformed copies.
            rounds: with `augment`, the number of transformed passes.
            seed: seed of the transforms when augmenting.
        """
        x = np.array(x, dtype=self.dtype, copy=True)
        if x.ndim != 4:
            raise ValueError(f"ImageDataGenerator.fit expects images of rank 4, received shape {x.shape}.")
        if x.shape[self.channel_axis] not in (1, 3, 4):
            log.warning("ImageDataGenerator.fit: images of shape %s have %d channels on axis %d (%s); expected "
                        "1, 3 or 4.", x.shape, x.shape[self.channel_axis], self.channel_axis, self.data_format)
        if self.rescale:  # statistics of the rescaled images, which standardize compares them with
            x *= self.rescale
        rng = np.random.RandomState(seed) if seed is not None else np.random.mtrand._rand
        if augment:
            x = np.concatenate([np.stack([self.random_transform(img, rng=rng) for img in x]) for _ in range(rounds)])
        axes = (0, self.row_axis, self.col_axis)
        shape = [1, 1, 1]
        shape[self.channel_axis - 1] = x.shape[self.channel_axis]
        if self.featurewise_center:
            self.mean = np.reshape(np.mean(x, axis=axes), shape)
            x -= self.mean
        if self.featurewise_std_normalization:
            self.std = np.reshape(np.std(x, axis=axes), shape)
            x /= self.std + 1e-6
        if self.zca_whitening:
            # Keras 3's form: the SVD of the data (its span only), sqrt(n)/(singular value + epsilon)
            n = len(x)
            flat = np.reshape(x, (n, -1))
            u, sv, _ = np.linalg.svd(flat.T, full_matrices=False)
            self.zca_whitening_matrix = (u * (np.sqrt(n) / (sv + self.zca_epsilon))) @ u.T

    # --- random transforms ---------------------------------------------------------------------------
    def get_random_transform(self, img_shape, seed=None, rng=None) -> dict:
        """Random transform parameters for one image of `img_shape` (Keras 2's draws, in its order).

        Args:
            img_shape: the image's shape (3-D).
            seed: seed for this draw (a fresh RandomState), or
            rng: a `numpy.random.RandomState` to draw from (default: NumPy's global generator).
        """
        if seed is not None:
            rng = np.random.RandomState(seed)
        elif rng is None:
            rng = np.random.mtrand._rand
        rows, cols = img_shape[self.row_axis - 1], img_shape[self.col_axis - 1]
        theta = rng.uniform(-self.rotation_range, self.rotation_range) if self.rotation_range else 0
        tx = self._draw_shift(rng, self.height_shift_range, rows)
        ty = self._draw_shift(rng, self.width_shift_range, cols)
        shear = rng.uniform(-self.shear_range, self.shear_range) if self.shear_range else 0
        if self.zoom_range[0] == 1 and self.zoom_range[1] == 1:
            zx, zy = 1, 1
        else:
            zx, zy = rng.uniform(self.zoom_range[0], self.zoom_range[1], 2)
        flip_h = bool((rng.random_sample() < 0.5) * self.horizontal_flip)
        flip_v = bool((rng.random_sample() < 0.5) * self.vertical_flip)
        channel_shift = None
        if self.channel_shift_range != 0:
            channel_shift = rng.uniform(-self.channel_shift_range, self.channel_shift_range)
        brightness = None
        if self.brightness_range is not None:
            brightness = rng.uniform(self.brightness_range[0], self.brightness_range[1])
        return {"theta": theta, "tx": tx, "ty": ty, "shear": shear, "zx": zx, "zy": zy, "flip_horizontal": flip_h,
                "flip_vertical": flip_v, "channel_shift_intensity": channel_shift, "brightness": brightness}

    @staticmethod
    def _draw_shift(rng, spec, size):
        if not spec:
            return 0
        if isinstance(spec, (list, int, np.integer)):  # Keras 2: a choice from the list (or range(v)), signed
            shift = rng.choice(spec) * rng.choice([-1, 1])
        else:
            shift = rng.uniform(-spec, spec)
        if np.max(spec) < 1:
            shift *= size
        return shift

    def apply_transform(self, x: np.ndarray, transform_parameters: dict) -> np.ndarray:
        """Apply `get_random_transform`'s parameters to one image (3-D, without the sample axis)."""
        p = transform_parameters
        row, col, chan = self.row_axis - 1, self.col_axis - 1, self.channel_axis - 1
        x = apply_affine_transform(x, p.get("theta", 0), p.get("tx", 0), p.get("ty", 0), p.get("shear", 0),
                                   p.get("zx", 1), p.get("zy", 1), row_axis=row, col_axis=col, channel_axis=chan,
                                   fill_mode=self.fill_mode, cval=self.cval, order=self.interpolation_order)
        if p.get("channel_shift_intensity") is not None:
            lo, hi = np.min(x), np.max(x)
            x = np.clip(x + p["channel_shift_intensity"], lo, hi)
        if p.get("flip_horizontal", False):
            x = np.flip(x, col)
        if p.get("flip_vertical", False):
            x = np.flip(x, row)
        if p.get("brightness") is not None:
            x = np.clip(x * p["brightness"], 0, 255)
        return np.ascontiguousarray(x, dtype=self.dtype)

    def random_transform(self, x: np.ndarray, seed=None, rng=None) -> np.ndarray:
        """One image randomly transformed (`get_random_transform` then `apply_transform`)."""
        return self.apply_transform(x, self.get_random_transform(x.shape, seed=seed, rng=rng))


__all__ = ["DataFrameIterator", "DirectoryIterator", "ImageDataGenerator", "Iterator", "NumpyArrayIterator", "apply_affine_transform",
           "array_to_img", "img_to_array", "load_img", "save_img"]
