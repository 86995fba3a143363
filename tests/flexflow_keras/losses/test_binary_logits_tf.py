"""Binary crossentropy on a sigmoid or softmax output against tf.keras: Keras' TensorFlow backend computes
it from the output's logits (`_keras_logits`), so saturated outputs keep their gradient (a classifier fed
raw 0-255 values learns instead of stalling on clipped probabilities), and a softmax output gets Keras'
own number, the sigmoid crossentropy of the softmax's logits."""

import numpy as np
import pytest

pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

r = np.random.RandomState(0)
X = (r.rand(64, 20) * 255).astype(np.float32)  # raw pixel-like values: the outputs saturate at once
Y1 = (X @ r.randn(20) > 0).astype(np.float32)[:, None]
Y2 = np.eye(2, dtype=np.float32)[Y1[:, 0].astype(int)]


YPIX = (X.reshape(64, 4, 5, 1) > 127).astype(np.float32)


def _dense(lib, units, act):
    return lib.Sequential([lib.Input((20,)), lib.layers.Dense(8, activation="relu"),
                           lib.layers.Dense(units, activation=act)])


def _conv(lib, units, act):  # an autoencoder's last layer: a sigmoid convolution, one label per pixel
    return lib.Sequential([lib.Input((4, 5, 1)), lib.layers.Conv2D(3, 3, padding="same", activation="relu"),
                           lib.layers.Conv2D(units, 3, padding="same", activation=act)])


@pytest.mark.parametrize("build, units, act, x, y", [(_dense, 1, "sigmoid", X, Y1), (_dense, 2, "softmax", X, Y2),
                                                     (_conv, 1, "sigmoid", X.reshape(64, 4, 5, 1), YPIX)],
                         ids=["dense-sigmoid", "dense-softmax", "conv-sigmoid"])
def test_binary_crossentropy_trains_from_the_logits_as_keras(build, units, act, x, y):
    ours, theirs = build(ff, units, act), build(keras, units, act)
    w = np.random.RandomState(1)
    weights = [(w.randn(*v.shape) * 0.2).astype(np.float32) for v in theirs.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    ours.compile(ff.optimizers.SGD(1e-3), "binary_crossentropy")
    theirs.compile(keras.optimizers.SGD(1e-3), "binary_crossentropy")
    h1 = ours.fit(x, y, epochs=3, batch_size=16, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(x, y, epochs=3, batch_size=16, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=2e-3)
    assert h1[0] > 5 * 0.6931  # the outputs did saturate
    np.testing.assert_allclose(ours.evaluate(x, y, verbose=0), theirs.evaluate(x, y, verbose=0), rtol=2e-3)
