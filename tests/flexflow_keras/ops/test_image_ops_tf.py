"""keras.ops.image (ops/image.py, ops/image_sampling.py) against Keras 3's on TensorFlow: values and dtypes on
random inputs in both data formats, batched and single images, recorded in a model, gradients; the clear
errors; and a ViT-style functional model (a Patches layer calling extract_patches) trained with fit."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")  # Keras 3 on the TensorFlow backend

from keras_parity import assert_same, keras_gradient, lambda_model, our_gradient  # noqa: E402

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import ops  # noqa: E402
from flexflow_keras.errors import ShapeError  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(3)


def _img(*shape):
    return rng.random(shape, dtype=np.float32)


CL, CF = "channels_last", "channels_first"


def _patches_cf(K, t):
    """extract_patches of channels_first images; Keras' own on channels_last ones, moved back: its
    TensorFlow Conv2D takes NCHW on the CPU only where oneDNN is on (AVX-512 hosts)."""
    if K is not keras.ops:
        return K.image.extract_patches(t, (2, 3), strides=2, data_format=CF)
    last, first = ((0, 2, 3, 1), (0, 3, 1, 2)) if len(t.shape) == 4 else ((1, 2, 0), (2, 0, 1))
    return K.transpose(K.image.extract_patches(K.transpose(t, last), (2, 3), strides=2), first)
# name: (fn(K, x), x); every one also runs recorded in a model and under both GradientTapes (batched x)
SYMBOLIC = {
    "patches": (lambda K, t: K.image.extract_patches(t, 3), _img(2, 9, 12, 3)),
    "patches_pair_strides_same": (lambda K, t: K.image.extract_patches(t, (2, 3), strides=(1, 2), padding="same"),
                                  _img(2, 7, 8, 2)),
    "patches_dilated": (lambda K, t: K.image.extract_patches(t, 3, strides=1, dilation_rate=2), _img(2, 8, 9, 2)),
    "patches_tiles_same": (lambda K, t: K.image.extract_patches(t, 4, padding="same"), _img(2, 9, 10, 3)),
    "patches_cf": (lambda K, t: _patches_cf(K, t), _img(2, 3, 7, 9)),
    "patches_3d": (lambda K, t: K.image.extract_patches(t, (2, 3, 2)), _img(2, 4, 6, 5, 2)),
    "resize_down": (lambda K, t: K.image.resize(t, (5, 4)), _img(2, 9, 7, 3)),
    "resize_up_cf": (lambda K, t: K.image.resize(t, (11, 13), data_format=CF), _img(2, 3, 6, 5)),
    "resize_nearest": (lambda K, t: K.image.resize(t, (7, 3), interpolation="nearest"), _img(2, 5, 6, 2)),
    "resize_crop_aspect": (lambda K, t: K.image.resize(t, (4, 4), crop_to_aspect_ratio=True), _img(2, 6, 10, 3)),
    "resize_pad_aspect": (lambda K, t: K.image.resize(t, (4, 4), pad_to_aspect_ratio=True, fill_value=0.5),
                          _img(2, 6, 10, 3)),
    "pad": (lambda K, t: K.image.pad_images(t, 1, 2, target_height=9, target_width=10), _img(2, 5, 6, 3)),
    "pad_cf": (lambda K, t: K.image.pad_images(t, bottom_padding=2, left_padding=1, target_height=8, right_padding=0,
                                               data_format=CF), _img(2, 3, 5, 6)),
    "crop": (lambda K, t: K.image.crop_images(t, 1, 2, target_height=3, target_width=3), _img(2, 6, 7, 3)),
    "crop_cf": (lambda K, t: K.image.crop_images(t, bottom_cropping=1, left_cropping=2, target_height=4,
                                                 right_cropping=1, data_format=CF), _img(2, 3, 6, 7)),
    "grayscale": (lambda K, t: K.image.rgb_to_grayscale(t), _img(2, 5, 6, 3)),
    "grayscale_cf": (lambda K, t: K.image.rgb_to_grayscale(t, data_format=CF), _img(2, 3, 5, 6)),
    "rgb_to_hsv": (lambda K, t: K.image.rgb_to_hsv(t), _img(2, 5, 6, 3)),
    "rgb_to_hsv_cf": (lambda K, t: K.image.rgb_to_hsv(t, data_format=CF), _img(2, 3, 5, 6)),
    "hsv_to_rgb": (lambda K, t: K.image.hsv_to_rgb(t), _img(2, 5, 6, 3)),
    "hsv_to_rgb_cf": (lambda K, t: K.image.hsv_to_rgb(t, data_format=CF), _img(2, 3, 5, 6)),
}
NO_GRADIENT = {"rgb_to_hsv", "rgb_to_hsv_cf",  # max/min/where ties: compared by value only
               "hsv_to_rgb", "hsv_to_rgb_cf"}  # TensorFlow has no gradient for it: finite differences below


@pytest.mark.parametrize("name", sorted(SYMBOLIC))
def test_values_match_keras_eager_single_and_in_a_model(name):
    fn, x = SYMBOLIC[name]
    want = fn(keras.ops, x)
    assert_same(fn(ops, x), want, what=name)
    assert_same(fn(ops, x[0]), fn(keras.ops, x[0]), what=f"{name} (one image)")
    model = lambda_model(fn, x.shape[1:])
    assert tuple(model.outputs[0].shape[1:]) == tuple(want.shape[1:])
    assert_same(model.predict(x, verbose=0), want, what=f"{name} (model)")


@pytest.mark.parametrize("name", sorted(set(SYMBOLIC) - NO_GRADIENT))
def test_gradients_match_keras(name):
    fn, x = SYMBOLIC[name]
    weights = rng.standard_normal(np.shape(fn(keras.ops, x))).astype("float32")
    want = keras_gradient(tf, keras, fn, x, weights)
    np.testing.assert_allclose(our_gradient(fn, x, weights), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(our_gradient(fn, x, weights, lambda_model(fn, x.shape[1:])), want, rtol=1e-5,
                               atol=1e-5)


def test_hsv_to_rgb_gradient_matches_finite_differences():
    fn, x = SYMBOLIC["hsv_to_rgb"]
    x = x[:1, :2, :3] * 0.8 + 0.1  # away from the kinks of the hue sectors' clips
    weights = rng.standard_normal(x.shape).astype("float32")
    got = our_gradient(fn, x, weights)
    np.testing.assert_allclose(our_gradient(fn, x, weights, lambda_model(fn, x.shape[1:])), got, rtol=1e-5, atol=1e-6)
    x64, eps, numeric = x.astype("float64"), 1e-4, np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        hi, lo = x64.copy(), x64.copy()
        hi[i] += eps
        lo[i] -= eps
        numeric[i] = (np.sum(np.asarray(fn(keras.ops, hi)) * weights) - np.sum(np.asarray(fn(keras.ops, lo)) * weights)
                      ) / (2 * eps)
    np.testing.assert_allclose(got, numeric, rtol=1e-3, atol=1e-3)


def test_integer_images_keep_their_dtype():
    x = rng.integers(0, 256, (2, 5, 6, 3)).astype("uint8")
    bilinear = lambda K, t: K.image.resize(t, (7, 4))  # noqa: E731
    got, want = np.asarray(bilinear(ops, x)), np.asarray(bilinear(keras.ops, x))
    assert got.dtype == want.dtype  # rounded from float32 sums: a .5 may round either way
    np.testing.assert_allclose(got.astype(int), want.astype(int), atol=1)
    for fn in (lambda K, t: K.image.resize(t, (3, 9), interpolation="nearest"),
               lambda K, t: K.image.rgb_to_grayscale(t), lambda K, t: K.image.extract_patches(t.astype("int32"), 2),
               lambda K, t: K.image.pad_images(t, 1, 1, 1, 1), lambda K, t: K.image.crop_images(t, 1, 1, 1, 1)):
        assert_same(fn(ops, x), fn(keras.ops, x))
    gray = rng.random((4, 5, 1), dtype=np.float32)
    assert_same(ops.image.rgb_to_grayscale(gray), keras.ops.image.rgb_to_grayscale(gray))


@pytest.mark.parametrize("fill_mode", ["constant", "nearest", "wrap", "reflect"])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
@pytest.mark.parametrize("data_format", [CL, CF])
def test_affine_transform_on_arrays(fill_mode, interpolation, data_format):
    x = _img(3, 7, 8, 2) if data_format == CL else _img(3, 2, 7, 8)
    a = rng.uniform(-0.6, 0.6, 3)
    t = np.stack([np.cos(a), -np.sin(a), rng.uniform(-2, 2, 3), np.sin(a), np.cos(a), rng.uniform(-2, 2, 3),
                  np.zeros(3), np.zeros(3)], axis=1).astype("float32")
    kw = dict(interpolation=interpolation, fill_mode=fill_mode, fill_value=0.25, data_format=data_format)
    assert_same(ops.image.affine_transform(x, t, **kw), keras.ops.image.affine_transform(x, t, **kw), atol=1e-5)
    assert_same(ops.image.affine_transform(x[1], t[1], **kw), keras.ops.image.affine_transform(x[1], t[1], **kw),
                atol=1e-5)


@pytest.mark.parametrize("fill_mode", ["constant", "nearest", "wrap", "reflect"])
@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates_on_arrays(fill_mode, order):
    x = _img(6, 7)
    coords = rng.uniform(-3, 9, (2, 4, 5)).astype("float32")
    got = ops.image.map_coordinates(x, coords, order, fill_mode=fill_mode, fill_value=0.5)
    assert_same(got, keras.ops.image.map_coordinates(x, coords, order, fill_mode=fill_mode, fill_value=0.5))


def test_errors_name_the_function_and_the_fix():
    x, sym = _img(2, 6, 6, 3), ff.Input((6, 6, 3))
    with pytest.raises(ShapeError, match=r"affine_transform runs on arrays only.*keras\.layers\.RandomRotation"):
        ops.image.affine_transform(sym, np.zeros(8, "float32"))
    with pytest.raises(ShapeError, match=r"map_coordinates runs on arrays only.*before fit"):
        ops.image.map_coordinates(sym, np.zeros((4, 1, 1)), 1)
    with pytest.raises(ValueError, match=r"projective terms"):
        ops.image.affine_transform(x, np.array([1, 0, 0, 0, 1, 0, 0.1, 0], "float32"))
    with pytest.raises(ValueError, match=r"interpolation='bicubic' is not implemented by flexflow_keras"):
        ops.image.resize(x, (3, 3), interpolation="bicubic")
    with pytest.raises(ValueError, match=r"antialias=True is not implemented"):
        ops.image.resize(x, (3, 3), antialias=True)
    with pytest.raises(ShapeError, match=r"symbolic tensor to be a batch of images of rank 4"):
        ops.image.extract_patches(ff.Input((6, 3)), 2)
    with pytest.raises(ValueError, match=r"Invalid images rank"):
        ops.image.rgb_to_grayscale(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"`strides > 1` not supported in conjunction with `dilation_rate > 1`"):
        ops.image.extract_patches(x, 2, strides=2, dilation_rate=2)
    with pytest.raises(ShapeError, match=r"do not fit in images of spatial size \(6, 6\)"):
        ops.image.extract_patches(x, 7)
    with pytest.raises(ValueError, match=r"Must specify exactly two of top_padding, bottom_padding, target_height"):
        ops.image.pad_images(x, 1, 1, 1, 1, target_height=9)
    with pytest.raises(ValueError, match=r"Invalid images dtype: expected float dtype"):
        ops.image.rgb_to_hsv(x.astype("int32"))
    assert hasattr(ops, "image") and ops.image.resize is not None


# --- a ViT-style model ---------------------------------------------------------------------------------------
def _vit(lib, patch=3):
    class Patches(lib.layers.Layer):
        def __init__(self, patch_size, **kwargs):
            super().__init__(**kwargs)
            self.patch_size = patch_size

        def call(self, images):
            shape = lib.ops.shape(images)
            n_h, n_w = shape[1] // self.patch_size, shape[2] // self.patch_size
            patches = lib.ops.image.extract_patches(images, size=self.patch_size)
            return lib.ops.reshape(patches, (shape[0], n_h * n_w, self.patch_size * self.patch_size * shape[3]))

    inp = lib.Input((9, 12, 3))
    h = lib.layers.Dense(8, activation="gelu")(Patches(patch)(inp))
    h = lib.layers.LayerNormalization()(h)
    h = lib.layers.GlobalAveragePooling1D()(h)
    return lib.Model(inp, lib.layers.Dense(4)(h))


def test_vit_style_model_trains_like_tf_keras():
    ours, theirs = _vit(ff), _vit(keras)
    weights = [(rng.standard_normal(w.shape) * 0.3).astype("float32") for w in ours.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    x, y = _img(8, 9, 12, 3), rng.integers(0, 4, 8)  # two epochs of one step: a loss per step
    ours.compile(optimizer=ff.optimizers.Adam(0.01), loss=ff.losses.SparseCategoricalCrossentropy(from_logits=True))
    theirs.compile(optimizer=keras.optimizers.Adam(0.01),
                   loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    ff.config.set(only_data_parallel=True)
    try:
        got = ours.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    finally:
        ff.config.reset()
    want = theirs.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
