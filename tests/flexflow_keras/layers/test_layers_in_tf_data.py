"""Layers called inside ``tf.data.Dataset.map`` on TensorFlow's symbolic tensors (keras.io's transfer-learning
guide resizes and augments its images there): they run on the pipeline's values, with the dtype and static
shape Keras 3 gives."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import layers

tf = pytest.importorskip("tensorflow")


def _images(sizes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]


def _dataset(images):
    def gen():
        for i, im in enumerate(images):
            yield im, np.int64(i % 2)

    return tf.data.Dataset.from_generator(  # of known length, as tfds' datasets are
        gen, output_signature=(tf.TensorSpec((None, None, 3), tf.uint8), tf.TensorSpec((), tf.int64)),
    ).apply(tf.data.experimental.assert_cardinality(len(images)))


def test_resizing_in_a_map_gives_keras_dtype_shape_and_values():
    images = _images([(40, 30), (25, 50)])
    resize = layers.Resizing(16, 16)
    ds = _dataset(images).map(lambda x, y: (resize(x), y))
    assert ds.element_spec[0].shape.as_list() == [16, 16, 3]
    assert ds.element_spec[0].dtype == tf.float32
    got = [x.numpy() for x, _ in ds]
    for im, out in zip(images, got, strict=True):
        # an eager call on uint8 gives uint8, rounded, as in Keras 3: the map's float32 is the float call's
        np.testing.assert_allclose(out, np.asarray(resize(im.astype("float32"))), rtol=1e-6)


def test_augmented_batches_train_a_model():
    flips = [layers.RandomFlip("horizontal"), layers.RandomRotation(0.1)]

    def augment(x):
        for layer in flips:
            x = layer(x)
        return x

    resize = layers.Resizing(12, 12)
    ds = _dataset(_images([(20, 18)] * 8, seed=1)).map(lambda x, y: (resize(x), y))
    ds = ds.map(lambda x, y: (augment(x), y)).batch(4)
    assert ds.element_spec[0].shape.as_list() == [None, 12, 12, 3]
    inputs = keras.Input(shape=(12, 12, 3))
    x = layers.GlobalAveragePooling2D()(layers.Rescaling(1 / 127.5, offset=-1)(inputs))
    model = keras.Model(inputs, layers.Dense(1)(x))
    model.compile("adam", keras.losses.BinaryCrossentropy(from_logits=True))
    history = model.fit(ds, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_two_tensor_arguments_in_a_map_say_what_runs():
    add = layers.Add()
    ds = tf.data.Dataset.from_tensor_slices((np.ones((2, 3), "float32"), np.ones((2, 3), "float32")))
    with pytest.raises(TypeError, match="only on one tensor"):
        ds.map(lambda a, b: add([a, b]))


def test_the_dtype_probe_leaves_an_augmentation_stream_and_build_as_they_were():
    images = [im[None] for im in _images([(20, 18)] * 3, seed=2)]

    def pipeline_outputs(seed):
        flip = layers.RandomFlip("horizontal_and_vertical", seed=seed)
        ds = tf.data.Dataset.from_tensor_slices(np.concatenate(images)).batch(1)
        ds = ds.map(flip)  # traced here: the dtype probe runs once
        assert flip._eager_calls == 0
        return [x.numpy() for x in ds], flip

    got, flip = pipeline_outputs(7)
    assert flip._eager_calls == len(images)
    ref = layers.RandomFlip("horizontal_and_vertical", seed=7)
    for im, out in zip(images, got, strict=True):  # the same draws as eager calls without a probe before them
        np.testing.assert_array_equal(out, np.asarray(ref(im)))


def test_a_sequential_is_built_for_the_real_static_shape_not_the_probe():
    model = keras.Sequential([layers.RandomFlip("horizontal", seed=1), layers.Rescaling(1 / 255)])
    ds = _dataset(_images([(10, 12)] * 4)).map(lambda x, y: x).batch(2)  # height and width unknown
    ds = ds.map(model)
    assert ds.element_spec.dtype == tf.float32
    assert model.built and tuple(model._inputs[0].shape) == (None, None, None, 3)  # not the probe's 32 x 32
    assert [tuple(x.shape) for x in ds] == [(2, 10, 12, 3)] * 2


class _BuggyShape(layers.Layer):
    def call(self, x):
        return x * 2

    def compute_output_shape(self, input_shape):
        return input_shape[5]["oops"]  # a bug: IndexError, not a layer that cannot say


class _CannotSay(layers.Layer):
    def call(self, x):
        return x * 2

    def compute_output_shape(self, input_shape):
        raise NotImplementedError("no shape rule")


def test_a_bug_in_compute_output_shape_is_logged_as_a_warning(caplog):
    layer = _BuggyShape(name="buggy")
    ds = tf.data.Dataset.from_tensor_slices(np.ones((2, 3), "float32"))
    with caplog.at_level("DEBUG", logger="flexflow_keras"):
        ds = ds.map(layer)
    warned = [r for r in caplog.records if r.levelname == "WARNING" and "buggy" in r.getMessage()]
    assert warned and "IndexError" in warned[0].getMessage() and warned[0].exc_info is not None
    assert ds.element_spec.shape.rank is None  # the shape stays unknown; the values still run
    assert [x.numpy().tolist() for x in ds] == [[2.0, 2.0, 2.0]] * 2


def test_a_layer_that_cannot_say_its_shape_is_logged_at_debug(caplog):
    ds = tf.data.Dataset.from_tensor_slices(np.ones((2, 3), "float32"))
    with caplog.at_level("DEBUG", logger="flexflow_keras"):
        ds = ds.map(_CannotSay(name="quiet"))
    mine = [r for r in caplog.records if "quiet" in r.getMessage()]
    assert mine and all(r.levelname == "DEBUG" for r in mine) and "NotImplementedError" in mine[0].getMessage()
