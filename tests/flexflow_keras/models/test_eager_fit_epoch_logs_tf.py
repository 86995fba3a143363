"""The logs that end an epoch and an evaluation of a model whose train_step / test_step runs as written
(models/eager_fit.py), against Keras 3.15: the results of ``model.metrics`` when the step returned the same
names, else the last step's logs (Keras' ``_get_metrics_result_or_logs``). keras.io's DDPM returns
``{"loss": loss}`` and updates no tracker, so its History reads the compiled loss tracker: 0.0."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _model(k, t, extra: bool, tracked: bool):
    class Step(k.Model):
        def __init__(self):
            super().__init__()
            self.dense = k.layers.Dense(1)
            self.tracker = k.metrics.Mean(name="loss") if tracked else None

        def call(self, x):
            return self.dense(x)

        @property
        def metrics(self):
            return [self.tracker] if tracked else super().metrics

        def train_step(self, data):
            x, y = data
            with t.GradientTape() as tape:
                loss = self.loss(y, self(x, training=True))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            if tracked:
                self.tracker.update_state(loss)
                return {"loss": self.tracker.result()}
            return {"loss": loss, "twice": loss * 2} if extra else {"loss": loss}

        def test_step(self, data):
            x, y = data
            loss = self.loss(y, self(x))
            if tracked:
                self.tracker.update_state(loss)
                return {"loss": self.tracker.result()}
            return {"loss": loss}

    m = Step()
    m(np.zeros((1, 3), np.float32))
    return m


@pytest.mark.parametrize(("extra", "tracked"), [(False, False), (True, False), (False, True)])
def test_epoch_and_evaluate_logs_are_keras(extra, tracked):
    x = (np.arange(30, dtype=np.float32).reshape(10, 3) / 30)
    y = x.sum(1, keepdims=True)
    theirs, ours = _model(tf.keras, tf, extra, tracked), _model(keras, FFTF, extra, tracked)
    ours.set_weights(theirs.get_weights())
    theirs.compile(tf.keras.optimizers.SGD(0.1), loss=tf.keras.losses.MeanSquaredError())
    ours.compile(keras.optimizers.SGD(0.1), loss=keras.losses.MeanSquaredError())
    kw = {"batch_size": 4, "epochs": 2, "shuffle": False, "verbose": 0, "validation_data": (x, y)}
    h1, h2 = ours.fit(x, y, **kw).history, theirs.fit(x, y, **kw).history
    assert sorted(h1) == sorted(h2)
    for key in h2:
        np.testing.assert_allclose(h1[key], h2[key], rtol=1e-5, atol=1e-7, err_msg=key)
    e1 = ours.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    e2 = theirs.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    assert sorted(e1) == sorted(e2)
    np.testing.assert_allclose([e1[k] for k in sorted(e1)], [float(e2[k]) for k in sorted(e2)], rtol=1e-5, atol=1e-7)
