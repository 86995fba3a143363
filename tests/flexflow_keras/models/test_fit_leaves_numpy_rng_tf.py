"""fit(), evaluate() and predict() leave NumPy's global random state alone, as Keras 3 on TensorFlow does
(its shuffles draw from TensorFlow's generator): the seed of fit's sample order comes from the framework's
own generator (utils/rng.make_seed, which keras.utils.set_random_seed seeds). keras.io's
deep_neural_decision_forests draws each tree's feature mask with np.random.choice after an earlier model's
fit; fit drew one number from NumPy's global state, so the forest's trees got other masks than under
tf.keras (np.random.seed(3): [0, 4, 1] expected, [5, 0, 4] received)."""

import numpy as np
import pytest

import flexflow_keras as ffk
from flexflow_keras import keras_alias

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
FFTF = keras_alias._TensorFlow("tensorflow")

pytestmark = pytest.mark.tf


class _OwnStep:
    """A model whose train_step computes its own gradients (the eager fit path)."""

    @staticmethod
    def make(lib):
        class Own(lib.Model):
            def train_step(self, data):
                x, y = data
                with (tf if lib is keras else FFTF).GradientTape() as tape:
                    target = lib.ops.expand_dims(lib.ops.cast(y, "float32"), -1)
                    loss = lib.ops.mean((self(x, training=True) - target) ** 2)
                grads = tape.gradient(loss, self.trainable_variables)
                self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
                return {"loss": loss}

        inp = lib.Input((4,))
        return Own(inp, lib.layers.Dense(1)(inp))


def _draws_after(lib, run):
    x = np.random.RandomState(0).rand(20, 4).astype("float32")
    y = np.random.RandomState(1).randint(0, 2, 20)
    np.random.seed(3)
    run(lib, x, y)
    return np.random.rand(3)


def _plain(lib):
    m = lib.Sequential([lib.Input((4,)), lib.layers.Dense(3), lib.layers.Dense(2, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


RUNS = {
    "fit shuffled": lambda lib, x, y: _plain(lib).fit(x, y, batch_size=8, epochs=2, verbose=0),
    "fit unshuffled": lambda lib, x, y: _plain(lib).fit(x, y, batch_size=8, shuffle=False, verbose=0),
    "fit validation_split": lambda lib, x, y: _plain(lib).fit(x, y, batch_size=8, validation_split=0.25, verbose=0),
    "fit dataset, evaluate, predict": lambda lib, x, y: [
        m.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(8) if lib is keras else
              FFTF.data.Dataset.from_tensor_slices((x, y)).batch(8), verbose=0)
        and m.evaluate(x, y, verbose=0) and m.predict(x, verbose=0)
        for m in [_plain(lib)]],
    "custom train_step": lambda lib, x, y: (lambda m: (m.compile(optimizer="sgd"),
                                                        m.fit(x, y, batch_size=8, verbose=0)))(_OwnStep.make(lib)),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_numpy_global_state_untouched_as_in_keras(name):
    np.random.seed(3)
    untouched = np.random.rand(3)
    want = _draws_after(keras, RUNS[name])
    got = _draws_after(ffk, RUNS[name])
    np.testing.assert_array_equal(want, untouched)  # tf.keras leaves it, so must we
    np.testing.assert_array_equal(got, want)


def test_set_random_seed_still_repeats_the_shuffled_fit():
    x = np.random.RandomState(0).rand(20, 4).astype("float32")
    y = np.random.RandomState(1).randint(0, 2, 20)
    runs = []
    for _ in range(2):
        ffk.utils.set_random_seed(7)
        m = _plain(ffk)
        runs.append(m.fit(x, y, batch_size=4, epochs=2, verbose=0).history["loss"])
    assert runs[0] == runs[1]
