"""tf.image's YUV/YIQ conversions and resize(method="area" and "bicubic") under the runner (tf_image_spaces.py), and an
unlabelled image folder mapped to (inputs, targets) pairs, against TensorFlow 2.21 / tf.keras 3.15: keras.io's
sub-pixel super-resolution builds its training pairs with rgb_to_yuv, tf.split and an area resize in a map of
image_dataset_from_directory(label_mode=None), and fits on it."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402
from flexflow_keras.data.dataset import image_dataset_from_directory  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
RNG = np.random.default_rng(0)
CONVERSIONS = ("rgb_to_yuv", "yuv_to_rgb", "rgb_to_yiq", "yiq_to_rgb")


@pytest.mark.parametrize("name", CONVERSIONS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_colour_spaces_match_tensorflow(name, dtype):
    a = RNG.uniform(0, 1, (2, 5, 4, 3)).astype(dtype)
    want = getattr(tf.image, name)(a).numpy()
    got = np.asarray(getattr(FFTF.image, name)(a))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_colour_space_on_a_tape_differentiates_as_tensorflow():
    a = RNG.uniform(0, 1, (4, 4, 3)).astype(np.float32)
    w = RNG.normal(size=(4, 4, 3)).astype(np.float32)
    tv, fv = tf.Variable(a), keras.Variable(a)
    with tf.GradientTape() as t:
        want = tf.reduce_sum(tf.image.rgb_to_yuv(tv) * w)
    with FFTF.GradientTape() as f:
        got = keras.ops.sum(FFTF.image.rgb_to_yuv(fv) * w)
    np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(f.gradient(got, fv)), t.gradient(want, tv).numpy(), rtol=1e-5, atol=1e-6)


def test_integer_images_or_other_channel_counts_are_refused():
    with pytest.raises(ValueError, match="float images"):
        FFTF.image.rgb_to_yuv(np.zeros((2, 2, 3), np.uint8))
    with pytest.raises(ValueError, match="3 channels"):
        FFTF.image.rgb_to_yiq(np.zeros((2, 2, 4), np.float32))


@pytest.mark.parametrize(("shape", "size", "dtype"), [((2, 12, 12, 1), (4, 4), "float32"),
                                                      ((7, 9, 3), (3, 4), "float32"),
                                                      ((1, 5, 7, 2), (3, 2), "uint8"),
                                                      ((6, 5, 2), (9, 8), "float64"),
                                                      ((1, 10, 6, 1), (4, 6), "float32")])
def test_area_resize_matches_tensorflow(shape, size, dtype):
    a = (RNG.uniform(0, 255, shape)).astype(dtype)
    want = tf.image.resize(a, size, method="area").numpy()
    got = np.asarray(FFTF.image.resize(a, size, method="area"))
    assert got.shape == want.shape and got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-5)


@pytest.mark.parametrize(("shape", "size", "dtype"), [((20, 20, 3), (18, 18), "float32"),
                                                      ((2, 5, 7, 3), (11, 13), "float32"),
                                                      ((2, 16, 9, 1), (4, 3), "float64"),
                                                      ((6, 5, 1), (9, 4), "uint8"),
                                                      ((1, 3, 3, 2), (10, 1), "float32"),
                                                      ((1, 1, 4, 1), (3, 8), "float32"),
                                                      ((1, 40, 36, 1), (48, 48), "float32")])
def test_bicubic_resize_matches_tensorflow(shape, size, dtype):
    """TensorFlow's half-pixel ResizeBicubic: its coefficient table, taps outside the image weighted 0 and the
    rest renormalised (keras.io's CaiT preprocesses with method="bicubic"; it was refused here)."""
    a = (RNG.uniform(0, 255, shape)).astype(dtype)
    want = tf.image.resize(a, size, method="bicubic").numpy()
    got = np.asarray(FFTF.image.resize(a, size, method="bicubic"))
    assert got.shape == want.shape and got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-4)


def test_other_methods_stay_a_clear_error():
    for method, antialias in (("lanczos3", False), ("bicubic", True)):
        with pytest.raises(ValueError, match="'area', are"):
            FFTF.image.resize(np.zeros((4, 4, 1), np.float32), (2, 2), method=method, antialias=antialias)


def _folder(tmp_path):
    from PIL import Image

    for i in range(6):
        Image.fromarray(RNG.integers(0, 255, (9, 9, 3)).astype(np.uint8)).save(tmp_path / f"im{i}.png")
    return str(tmp_path)


def _pairs(t):
    def make(x):
        y, _, _ = t.split(t.image.rgb_to_yuv(x / 255.0), 3, axis=3)
        return t.image.resize(y, [3, 3], method="area"), y
    return make


def test_unlabelled_folder_mapped_to_pairs_fits_as_tf_keras(tmp_path, request):
    request.addfinalizer(config.reset)
    folder = _folder(tmp_path)
    kw = dict(batch_size=4, image_size=(9, 9), label_mode=None, shuffle=False)
    want_ds = tf.keras.utils.image_dataset_from_directory(folder, **kw).map(_pairs(tf))
    got_ds = image_dataset_from_directory(folder, **kw).map(_pairs(FFTF))
    for (wx, wy), (gx, gy) in zip(want_ds, got_ds, strict=True):
        np.testing.assert_allclose(np.asarray(gx), wx.numpy(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(np.asarray(gy), wy.numpy(), rtol=1e-6, atol=1e-7)

    def model(k, space):
        inp = k.Input((3, 3, 1))
        x = k.layers.Conv2D(9, 3, padding="same")(inp)
        return k.Model(inp, k.layers.Lambda(lambda t: space.nn.depth_to_space(t, 3))(x))
    theirs, ours = model(tf.keras, tf), model(keras, FFTF)
    ours.set_weights(theirs.get_weights())
    for m in (theirs, ours):
        m.compile(optimizer=m is theirs and tf.keras.optimizers.SGD(0.1) or keras.optimizers.SGD(0.1), loss="mse")
    want = theirs.fit(want_ds, epochs=2, validation_data=want_ds.take(1), verbose=0).history
    got = ours.fit(got_ds, epochs=2, validation_data=got_ds.take(1), verbose=0).history
    for name in ("loss", "val_loss"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, err_msg=name)
