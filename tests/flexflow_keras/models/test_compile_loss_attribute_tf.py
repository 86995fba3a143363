"""`model.loss`, Keras 3's attribute holding the loss compile was given (None before compile; a compile
without a loss keeps it), against tf.keras 3.15. keras.io's barlow_twins calls ``self.loss(z_a, z_b)`` in its
train_step with the BarlowLoss it compiled: 'BarlowModel' object has no attribute 'loss'."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(0)


def _seq(lib):
    return lib.Sequential([lib.Input((3,)), lib.layers.Dense(2, name="out")])


def test_the_attribute_follows_compile_as_in_tf_keras():
    for lib in (ff, keras_ref):
        m = _seq(lib)
        assert m.loss is None
        m.compile("sgd", "mse")
        assert m.loss == "mse"
        loss = lib.losses.Huber()
        m.compile("sgd", loss=loss)
        assert m.loss is loss
        m.compile("sgd", loss={"out": "mae"})
        assert m.loss == {"out": "mae"}
        m.compile("sgd")
        assert m.loss == {"out": "mae"}


def _twin(lib, tfm):
    class PairLoss(lib.losses.Loss):
        def call(self, a, b):
            return lib.ops.mean(lib.ops.square(a - b)) + 0.1 * lib.ops.mean(lib.ops.square(a))

    class Twin(lib.Model):
        def __init__(self):
            super().__init__()
            self.model = lib.Sequential([lib.Input((4,)), lib.layers.Dense(3, activation="tanh"), lib.layers.Dense(2)])
            self.tracker = lib.metrics.Mean(name="loss")

        @property
        def metrics(self):
            return [self.tracker]

        def train_step(self, batch):
            a, b = batch
            with tfm.GradientTape() as tape:
                loss = self.loss(self.model(a, training=True), self.model(b, training=True))
            grads = tape.gradient(loss, self.model.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables, strict=True))
            self.tracker.update_state(loss)
            return {"loss": self.tracker.result()}

    twin = Twin()
    twin.compile(optimizer=lib.optimizers.SGD(0.1), loss=PairLoss())
    return twin


def _pairs(tfm, a):
    data = tfm.data.Dataset.from_tensor_slices(a).batch(8)
    return tfm.data.Dataset.zip((data, data.map(lambda x: x[:, ::-1])))


def test_a_train_step_calling_self_loss_trains_as_tf_keras():
    import tensorflow as tf

    from flexflow_keras import keras_alias

    fftf = keras_alias._TensorFlow("tensorflow")
    a = rng.normal(size=(16, 4)).astype("float32")
    ours, theirs = _twin(ff, fftf), _twin(keras_ref, tf)
    ours.model.set_weights(theirs.model.get_weights())
    h1 = ours.fit(_pairs(fftf, a), epochs=2, verbose=0).history["loss"]
    h2 = theirs.fit(_pairs(tf, a), epochs=2, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    for x, y in zip(ours.model.get_weights(), theirs.model.get_weights(), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-6)
