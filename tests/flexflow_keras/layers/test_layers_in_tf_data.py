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
        np.testing.assert_allclose(out, np.asarray(resize(im)), rtol=1e-6)


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
