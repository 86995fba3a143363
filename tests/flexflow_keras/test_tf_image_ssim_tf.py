"""tf.image.image_gradients and tf.image.ssim under the runner (tf_image_quality.py) against TensorFlow 2.21:
values on batches, single images and uint8 images, the index map, tape gradients, and keras.io's monocular
depth estimation loss (image gradients, SSIM with filter_size=7, L1) in a model trained with fit."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
RNG = np.random.default_rng(0)


def test_image_gradients_give_tensorflows_values():
    x = RNG.standard_normal((2, 5, 6, 3)).astype(np.float32)
    for got, want in zip(FFTF.image.image_gradients(x), tf.image.image_gradients(tf.constant(x)), strict=True):
        np.testing.assert_array_equal(np.asarray(got), want.numpy())
    with pytest.raises(ValueError, match="image_gradients expects a 4D tensor"):
        FFTF.image.image_gradients(x[0])


@pytest.mark.parametrize("case", ["batch", "single", "uint8", "map"])
def test_ssim_gives_tensorflows_values(case):
    a = RNG.uniform(0, 1, (3, 12, 13, 2)).astype(np.float32)
    b = np.clip(a + RNG.normal(0, 0.2, a.shape), 0, 1).astype(np.float32)
    kw = {"max_val": 1.0}
    if case == "single":
        a, b = a[0], b[0]
    if case == "uint8":
        a, b, kw = (a * 255).astype(np.uint8), (b * 255).astype(np.uint8), {"max_val": 255}
    if case == "map":
        kw.update(filter_size=7, k1=0.01**2, k2=0.03**2, return_index_map=True)
    got, want = np.asarray(FFTF.image.ssim(a, b, **kw)), tf.image.ssim(a, b, **kw).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_ssim_errors_say_what_to_pass():
    a = np.zeros((1, 6, 6, 1), np.float32)
    with pytest.raises(ValueError, match="smaller than filter_size=11"):
        FFTF.image.ssim(a, a, 1.0)
    with pytest.raises(ValueError, match="of one known height, width and channels"):
        FFTF.image.ssim(a, a[:, :5], 1.0, filter_size=3)


def _depth_loss(t, target, pred):
    """keras.io depth_estimation's loss: edge-weighted smoothness, SSIM and L1."""
    dy_true, dx_true = t.image.image_gradients(target)
    dy_pred, dx_pred = t.image.image_gradients(pred)
    wx, wy = t.exp(t.reduce_mean(t.abs(dx_true))), t.exp(t.reduce_mean(t.abs(dy_true)))
    smooth = t.reduce_mean(abs(dx_pred * wx)) + t.reduce_mean(abs(dy_pred * wy))
    ssim = t.reduce_mean(1 - t.image.ssim(target, pred, max_val=16, filter_size=7, k1=0.01**2, k2=0.03**2))
    return 0.85 * ssim + 0.1 * t.reduce_mean(t.abs(target - pred)) + 0.9 * smooth


def test_tape_gradients_match_tensorflow():
    target = RNG.uniform(0, 2, (2, 9, 10, 1)).astype(np.float32)
    p = RNG.uniform(0, 2, target.shape).astype(np.float32)
    ov, tv = keras.Variable(p), tf.Variable(p)
    with FFTF.GradientTape() as tape:
        lo = _depth_loss(FFTF, target, ov * 1.0)
    with tf.GradientTape() as ttape:
        lt = _depth_loss(tf, tf.constant(target), tv * 1.0)
    np.testing.assert_allclose(float(lo), float(lt), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tape.gradient(lo, ov)), ttape.gradient(lt, tv).numpy(), rtol=1e-4,
                               atol=1e-7)


def _depth_model(k, t):
    class Depth(k.Model):
        def __init__(self):
            super().__init__()
            self.conv = k.layers.Conv2D(4, 3, padding="same", activation="relu")
            self.out = k.layers.Conv2D(1, 1, activation="tanh")
            self.tracker = k.metrics.Mean(name="loss")

        def call(self, x):
            return self.out(self.conv(x))

        @property
        def metrics(self):
            return [self.tracker]

        def train_step(self, data):
            x, y = data
            with t.GradientTape() as tape:
                loss = _depth_loss(t, y, self(x, training=True))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            self.tracker.update_state(loss)
            return {"loss": self.tracker.result()}

    m = Depth()
    m(np.zeros((1, 12, 12, 3), np.float32))
    return m


def test_the_depth_estimation_loss_trains_as_tf_keras():
    x = RNG.uniform(0, 1, (8, 12, 12, 3)).astype(np.float32)
    y = RNG.uniform(0.1, 1, (8, 12, 12, 1)).astype(np.float32)
    theirs, ours = _depth_model(tf.keras, tf), _depth_model(keras, FFTF)
    ours.set_weights(theirs.get_weights())
    theirs.compile(optimizer=tf.keras.optimizers.SGD(0.1))
    ours.compile(optimizer=keras.optimizers.SGD(0.1))
    h1 = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
