"""A compiled model whose own train_step runs eagerly has Keras 3's loss tracker: ``model.metrics`` starts
with a Mean named "loss", and the deprecated ``self.compiled_metrics.update_state(y, y_pred)`` updates it
as Keras 3's TensorFlow shim does (with y_pred: a Mean metric of model.metrics gets ``update_state(y_pred)``).
So a step returning ``{m.name: m.result() for m in self.metrics}`` (keras.io's ShiftViT) logs "loss" and
evaluate returns [loss, metrics...], as tf.keras; before, evaluate returned one value fewer."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _model(T, K):
    class M(K.Model):
        def __init__(self):
            super().__init__()
            self.d = K.layers.Dense(3)

        def call(self, x):
            return self.d(x)

        def _loss(self, y, p):  # a helper of the script's own: the step runs eagerly
            return self.compiled_loss(y, p)

        def train_step(self, data):
            x, y = data
            with T.GradientTape() as tape:
                p = self(x, training=True)
                loss = self._loss(y, p)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            self.compiled_metrics.update_state(y, p)
            return {m.name: m.result() for m in self.metrics}

        def test_step(self, data):
            x, y = data
            p = self(x)
            self.compiled_metrics.update_state(y, p)
            return {m.name: m.result() for m in self.metrics}

    m = M()
    m.compile(optimizer=K.optimizers.SGD(0.1), loss=K.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=[K.metrics.SparseCategoricalAccuracy(name="accuracy")])
    return m


def _run(T, K):
    rng = np.random.RandomState(0)
    x = rng.rand(16, 4).astype("float32")
    y = (np.arange(16) % 3).astype("int32")
    m = _model(T, K)
    m(x[:2])
    m.set_weights([np.full((4, 3), 0.1, "float32") * np.arange(3), np.zeros(3, "float32")])
    h = m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    return h.history, m.evaluate(x, y, batch_size=8, verbose=0), m.metrics[0].name


def test_eager_step_logs_loss_tracker_as_tf():
    ref_hist, ref_eval, ref_first = _run(tf, tk)
    hist, ev, first = _run(FFTF, ff)
    assert first == ref_first == "loss"
    assert sorted(hist) == sorted(ref_hist)
    for k in ref_hist:
        np.testing.assert_allclose(hist[k], ref_hist[k], rtol=1e-5, atol=1e-6)
    assert isinstance(ev, list) and len(ev) == len(ref_eval) == 2
    np.testing.assert_allclose(ev, ref_eval, rtol=1e-5, atol=1e-6)
