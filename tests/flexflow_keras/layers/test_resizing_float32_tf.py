"""keras.layers.Resizing (and keras.ops.image.resize, CenterCrop's aspect-window resize) on the CPU resizes
with TensorFlow's float32 source coordinates (kernels.augment.resize_forward_cpu): the affine kernel's
float64 coordinates put bilinear pixels up to 3e-3 (of 255) off tf.image.resize, 3-20% bit-equal."""

import numpy as np
import pytest

import flexflow_keras as ff

_SIZES = [((28, 28), (96, 96)), ((30, 40), (11, 9)), ((100, 37), (299, 64))]


def _images(h, w, channels_first=False):
    x = np.random.default_rng(0).integers(0, 256, (2, h, w, 3)).astype("float32")
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if channels_first else x


def _resize(lib, x, size, **kw):
    layer = lib.layers.Resizing(*size, **kw)
    model = lib.Sequential([lib.Input(x.shape[1:]), layer])
    return np.asarray(layer(x)), model.predict(x, verbose=0)


def test_bilinear_weights_are_float32():
    # a 3 -> 7 column ramp: TensorFlow's float32 lerp weights give these values exactly
    x = np.array([[[0.0], [255.0], [17.0]]], "float32")[None]
    got = np.asarray(ff.layers.Resizing(1, 7)(x))[0, 0, :, 0]
    scale, want = np.float32(3) / np.float32(7), []
    for j in range(7):
        c = (np.float32(j) + np.float32(0.5)) * scale - np.float32(0.5)
        f = int(np.floor(c))
        a, b = x[0, 0, min(max(f, 0), 2), 0], x[0, 0, min(max(f + 1, 0), 2), 0]
        want.append(a + (b - a) * np.float32(c - np.float32(f)))
    np.testing.assert_array_equal(got, np.asarray(want, np.float32))


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
@pytest.mark.parametrize("crop", [False, True])
def test_bit_equal_to_tensorflow(interpolation, crop):
    pytest.importorskip("tensorflow")
    tf_keras = pytest.importorskip("tensorflow.keras")
    for (h, w), size in _SIZES:
        for channels_first in (False, True):
            fmt = "channels_first" if channels_first else "channels_last"
            x = _images(h, w, channels_first)
            kw = {"interpolation": interpolation, "crop_to_aspect_ratio": crop, "data_format": fmt}
            want = np.asarray(tf_keras.layers.Resizing(*size, **kw)(x))
            for got in _resize(ff, x, size, **kw):
                np.testing.assert_array_equal(got, want, err_msg=f"{h}x{w} -> {size} {kw}")


def test_resizing_trains_as_tensorflow():
    tf = pytest.importorskip("tensorflow")  # noqa: F841 - the peer's Keras needs it
    tf_keras = pytest.importorskip("tensorflow.keras")
    x = _images(30, 40) / 255.0
    y = np.array([[1.0], [0.0]], "float32")

    def run(lib):
        model = lib.Sequential([lib.Input((30, 40, 3)), lib.layers.Conv2D(2, 3), lib.layers.Resizing(11, 9),
                                lib.layers.Flatten(), lib.layers.Dense(1)])
        model.set_weights([np.full(w.shape, 0.01 * (i + 1), "float32") for i, w in enumerate(model.get_weights())])
        model.compile(lib.optimizers.SGD(0.01), "mse")
        history = model.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0).history["loss"]
        return history, model.get_weights()

    (got_h, got_w), (want_h, want_w) = run(ff), run(tf_keras)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-5)
    for g, w in zip(got_w, want_w, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)
