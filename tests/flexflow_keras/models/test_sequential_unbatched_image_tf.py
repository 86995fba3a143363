"""A Sequential of image preprocessing layers called on ONE (height, width, channels) image, as tf.keras 3.15
runs it: Hands-On ML ch14 maps ``preprocess = Sequential([Resizing(224, 224, crop_to_aspect_ratio=True),
Lambda(xception.preprocess_input)])`` over unbatched tf_flowers images, and the tensorflow/docs
augmentation tutorial calls ``resize_and_rescale(image)``. Ours built the model with the image's rows as
the batch axis and refused: "Resizing expects a batch of images ... received shape (None, 160, 3)"."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
IMG = np.random.default_rng(0).integers(0, 256, (30, 40, 3)).astype("uint8")


def _preprocess(lib):
    return lib.Sequential([lib.layers.Resizing(16, 16, crop_to_aspect_ratio=True),
                           lib.layers.Lambda(lib.applications.xception.preprocess_input)])


def test_one_image_then_a_batch_as_tf_keras():
    ours, theirs = _preprocess(ff), _preprocess(keras_ref)
    a, b = np.asarray(ours(IMG)), np.asarray(theirs(IMG))
    assert a.shape == b.shape == (16, 16, 3)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(ours(IMG.astype("float32"))), b, rtol=1e-5, atol=1e-5)
    batch = np.stack([IMG, IMG[::-1]])  # then a batch of such images: Keras' functional adds the axis back
    np.testing.assert_allclose(np.asarray(ours(batch))[1], np.asarray(_preprocess(keras_ref)(IMG[::-1])),
                               rtol=1e-5, atol=1e-5)


def test_rescaling_first_then_resizing_as_tf_keras():
    got = [np.asarray(lib.Sequential([lib.layers.Rescaling(1 / 255), lib.layers.Resizing(8, 8)])(IMG))
           for lib in (ff, keras_ref)]
    assert got[0].shape == (8, 8, 3)
    np.testing.assert_allclose(got[0], got[1], rtol=1e-5, atol=1e-6)


def test_without_image_layers_the_first_axis_stays_the_batch_as_tf_keras():
    x = IMG.astype("float32")
    models = [lib.Sequential([lib.layers.Dense(2, kernel_initializer="ones")]) for lib in (ff, keras_ref)]
    assert [tuple(np.asarray(m(x)).shape) for m in models] == [(30, 40, 2)] * 2
