"""Resizing / CenterCrop of images whose height and width the model leaves open (Input((None, None, 3))),
as keras.io's learnable image resizer starts: the layers record a fixed-size output and read the data's size
at run time, as tf.keras 3.15 does; it was a ShapeError ('needs images of a known height and width')."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402

pytestmark = pytest.mark.tf
RNG = np.random.default_rng(0)


def _model(k, crop):
    inp = k.Input((None, None, 3))
    x = (k.layers.CenterCrop(6, 6) if crop else k.layers.Resizing(6, 6))(inp)
    x = k.layers.Conv2D(4, 3, padding="same")(x)
    return k.Model(inp, k.layers.Dense(2)(k.layers.GlobalAveragePooling2D()(x)))


@pytest.mark.parametrize("crop", [False, True])
def test_open_sized_images_resize_and_train_as_tf_keras(crop):
    theirs, ours = _model(tf.keras, crop), _model(keras, crop)
    ours.set_weights(theirs.get_weights())
    for size in ((10, 9), (6, 13)):
        x = RNG.uniform(0, 1, (5,) + size + (3,)).astype(np.float32)
        np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    x = RNG.uniform(0, 1, (6, 11, 8, 3)).astype(np.float32)
    y = RNG.standard_normal((6, 2)).astype(np.float32)
    for m, k in ((theirs, tf.keras), (ours, keras)):
        m.compile(optimizer=k.optimizers.SGD(0.1), loss="mse")
    want = theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    got = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-5)
