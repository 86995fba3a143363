"""A float `steps_per_epoch` / `validation_steps` / `steps` (``len(train) / batch_size``, as the TensorFlow
Developer certificate's C2 W4 assignment passes) runs ceil(value) batches with a warning, as Keras 2's loop
did (it ran while the step number was below the value); Keras 3 raises a TypeError. Ours ran floor(value)
training steps but ceil(value) validation batches. Anything but a number is a TypeError naming the argument."""

import logging

import numpy as np
import pytest

import flexflow_keras as keras

X = np.random.default_rng(0).random((300, 4)).astype(np.float32)
Y = (X.sum(1) > 2).astype(np.float32)


def _batches():
    while True:
        for i in range(0, 300, 32):
            yield X[i:i + 32], Y[i:i + 32]


class _Count(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.steps.append(0)

    def on_train_batch_end(self, batch, logs=None):
        self.steps[-1] += 1

    def on_test_batch_end(self, batch, logs=None):
        self.tests += 1


def _model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile("sgd", "binary_crossentropy")
    return model


def test_float_steps_run_ceil_batches_with_a_warning(caplog):
    count = _Count()
    count.steps, count.tests = [], 0
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        _model().fit(_batches(), steps_per_epoch=300 / 32, epochs=2, validation_data=_batches(),
                     validation_steps=100 / 32, verbose=0, callbacks=[count])
    assert count.steps == [10, 10]
    assert count.tests == 2 * 4
    text = caplog.text
    assert "steps_per_epoch=9.375" in text and "running 10" in text and "validation_steps=3.125" in text


def test_evaluate_and_predict_take_float_steps():
    model = _model()
    assert model.predict(_batches(), steps=2.5, verbose=0).shape == (3 * 32, 1)
    count = _Count()
    count.steps, count.tests = [], 0
    model.evaluate(_batches(), steps=1.2, verbose=0, callbacks=[count])
    assert count.tests == 2
    assert model.predict(_batches(), steps=2.0, verbose=0).shape == (2 * 32, 1)  # a whole float: no rounding


@pytest.mark.parametrize("value", ["10", True, float("nan")])
def test_other_steps_are_a_type_error_naming_the_argument(value):
    with pytest.raises(TypeError, match="steps_per_epoch"):
        _model().fit(_batches(), steps_per_epoch=value, epochs=1, verbose=0)
