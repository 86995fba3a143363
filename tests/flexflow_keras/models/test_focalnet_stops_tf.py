"""What keras.io's focal modulation network stopped on, against tf.keras 3.15: a layer whose call() returns
Python values beside its tensor (``x, tf.shape(x)[1], ...``, handed on to the next layers), and a custom
LearningRateSchedule without get_config (Keras asks for it only to save), which the strategy search's
cache key asked for."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.execution import choice  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _net(k, t):
    class Embed(k.layers.Layer):
        def __init__(self):
            super().__init__()
            self.proj = k.layers.Conv2D(4, 2, strides=2)
            self.flat = k.layers.Reshape((-1, 4))

        def call(self, x):
            x = self.proj(x)
            return self.flat(x), t.shape(x)[1], t.shape(x)[2], t.shape(x)[3]

    class Block(k.layers.Layer):
        def __init__(self):
            super().__init__()
            self.conv = k.layers.Conv2D(4, 3, padding="same", groups=4)

        def call(self, x, height, width, channels):
            y = self.conv(t.reshape(x, (-1, height, width, channels)))
            return x + t.reshape(y, (-1, height * width, channels))

    class Net(k.Model):
        def __init__(self):
            super().__init__()
            self.embed, self.block = Embed(), Block()
            self.pool, self.head = k.layers.GlobalAveragePooling1D(), k.layers.Dense(3, activation="softmax")

        def call(self, x):
            x, h, w, c = self.embed(x)
            return self.head(self.pool(self.block(x, h, w, c)))

    return Net()


def _schedule(k, t):
    class Warm(k.optimizers.schedules.LearningRateSchedule):  # no get_config, as keras.io's WarmUpCosine
        def __call__(self, step):
            return t.where(step < 2, 0.05 * (t.cast(step, "float32") + 1.0), 0.1)

    return Warm()


def test_python_values_beside_tensors_and_a_schedule_without_config_train_as_tf_keras():
    x = np.random.default_rng(0).uniform(0, 1, (8, 8, 8, 3)).astype(np.float32)
    y = np.arange(8) % 3
    theirs, ours = _net(tf.keras, tf), _net(keras, FFTF)
    theirs(x[:1]), ours(x[:1])
    ours.set_weights(theirs.get_weights())
    theirs.compile(tf.keras.optimizers.SGD(_schedule(tf.keras, tf)), loss="sparse_categorical_crossentropy")
    ours.compile(keras.optimizers.SGD(_schedule(keras, FFTF)), loss="sparse_categorical_crossentropy")
    h1 = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-4, atol=1e-6)
    assert choice._optimizer_key(ours.optimizer).endswith("Warm")
    assert "learning_rate" in choice._optimizer_key(keras.optimizers.SGD(0.1))


def test_a_call_returning_no_tensor_or_an_array_is_refused():
    class Host(keras.layers.Layer):
        def call(self, x):
            return x, np.zeros(3)

    with pytest.raises(TypeError, match=r"must return symbolic tensors .* it returned \['ndarray'\]"):
        Host()(keras.Input((3,)))
