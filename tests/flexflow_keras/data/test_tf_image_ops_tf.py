"""tf.image's crops, pads and flips on the framework's tensors (flexflow_keras/tf_image_ops.py) against
TensorFlow: inside a layer's call() of a functional model (keras.io's small-data ViT shifts its images with
crop_to_bounding_box / pad_to_bounding_box there: it stopped converting a KerasTensor to NumPy), eagerly on an
EagerTensor, and differentiated under a GradientTape."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import tf_image as T
from flexflow_keras.errors import ArgumentError
from flexflow_keras.ops.eager_tensor import EagerTensor, as_eager
from flexflow_keras.ops.tape import GradientTape
from flexflow_keras.variables import tf_variable

CALLS = [
    ("crop_to_bounding_box", (3, 0, 5, 6)),
    ("crop_to_bounding_box", (0, 2, 8, 4)),
    ("pad_to_bounding_box", (0, 3, 10, 11)),
    ("pad_to_bounding_box", (2, 1, 11, 9)),
    ("flip_left_right", ()),
    ("flip_up_down", ()),
    ("resize_with_crop_or_pad", (5, 10)),
    ("resize_with_crop_or_pad", (11, 4)),
    ("central_crop", (0.5,)),
]


def _images(batch: bool):
    rng = np.random.default_rng(1)
    return rng.normal(size=((2,) if batch else ()) + (8, 7, 3)).astype("float32")


@pytest.mark.tf
@pytest.mark.parametrize("name,args", CALLS)
def test_in_a_model_and_eagerly_as_tensorflow(name, args):
    tf = pytest.importorskip("tensorflow")
    x = _images(batch=True)
    want = getattr(tf.image, name)(x, *args).numpy()

    class Shift(keras.layers.Layer):
        def call(self, images):
            return getattr(T, name)(images, *args)

    inp = keras.Input((8, 7, 3))
    model = keras.Model(inp, Shift()(inp))
    np.testing.assert_array_equal(model.predict(x, verbose=0), want)
    for image, ref in ((as_eager(x), want), (as_eager(x[0]), getattr(tf.image, name)(x[0], *args).numpy())):
        got = getattr(T, name)(image, *args)
        assert isinstance(got, EagerTensor) and got.shape == ref.shape
        np.testing.assert_array_equal(np.asarray(got), ref)


@pytest.mark.tf
@pytest.mark.parametrize("name,args", CALLS)
def test_gradients_under_a_tape_as_tensorflow(name, args):
    tf = pytest.importorskip("tensorflow")
    x = _images(batch=True)
    weights = np.random.default_rng(2).normal(size=getattr(tf.image, name)(x, *args).shape).astype("float32")
    tv = tf.Variable(x)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(getattr(tf.image, name)(tv, *args) * weights)
    want = tape.gradient(loss, tv).numpy()
    v = tf_variable(x)
    with GradientTape() as ff_tape:
        ff_loss = keras.ops.sum(getattr(T, name)(v, *args) * weights)
    np.testing.assert_allclose(np.asarray(ff_tape.gradient(ff_loss, v)), want, rtol=1e-6, atol=1e-6)


def test_a_box_outside_the_image_and_an_open_size_are_clear():
    inp = keras.Input((8, 7, 3))
    with pytest.raises(ArgumentError, match="does not fit an image of 8x7"):
        T.crop_to_bounding_box(inp, 4, 0, 5, 7)
    with pytest.raises(ArgumentError, match="does not fit 8x8"):
        T.pad_to_bounding_box(inp, 0, 2, 8, 8)
    with pytest.raises(ArgumentError, match="height and width known"):
        T.flip_left_right(keras.Input((None, None, 3)))
