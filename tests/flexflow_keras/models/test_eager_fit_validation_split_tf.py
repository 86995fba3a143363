"""A model whose own train_step runs eagerly takes fit(x, validation_split=...) as Keras 3 does (the last
samples of the arrays validate through its test_step), and such a model with two outputs predicts: keras.io's
RealNVP (``model.fit(normalized_data, batch_size=256, epochs=300, validation_split=0.2)``, a call() returning
``(x, log_det_inv)``) stopped on "validation_split with a custom train_step: pass validation_data=(x_val,
y_val) instead", and then its ``model.predict(samples)`` on "overrides train_step(); that is supported for
models with one output, this one has 2"."""

import numpy as np
import pytest

import flexflow_keras as ff
from flexflow_keras.data.slices import SliceDataset
from flexflow_keras.errors import DataError
from flexflow_keras.ops.tape import GradientTape

rs = np.random.RandomState(0)
X = rs.rand(50, 3).astype("float32")
W = [rs.randn(3, 4).astype("float32") * 0.5, np.zeros(4, "float32"), rs.randn(4, 2).astype("float32") * 0.5,
     np.zeros(2, "float32")]


def _model(lib, tape_cls):
    class TwoOutputs(lib.Model):  # a flow-like model: call() gives (z, log_det), the step its own loss
        def __init__(self):
            super().__init__()
            self.hidden = lib.layers.Dense(4, activation="tanh")
            self.out = lib.layers.Dense(2)
            self.tracker = lib.metrics.Mean(name="loss")

        @property
        def metrics(self):
            return [self.tracker]

        def call(self, x):
            h = self.hidden(x)
            return self.out(h), lib.ops.sum(h, axis=1)

        def _loss(self, x):
            z, log_det = self(x)
            return lib.ops.mean(0.5 * lib.ops.sum(z * z, axis=1) - log_det)

        def train_step(self, data):
            with tape_cls() as tape:
                loss = self._loss(data)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            self.tracker.update_state(loss)
            return {"loss": self.tracker.result()}

        def test_step(self, data):
            self.tracker.update_state(self._loss(data))
            return {"loss": self.tracker.result()}

    model = TwoOutputs()
    model(X[:1])
    model.set_weights(W)
    model.compile(lib.optimizers.SGD(0.05))
    return model


def test_validation_split_holds_out_the_last_samples():
    model = _model(ff, GradientTape)
    history = model.fit(X, batch_size=16, epochs=2, validation_split=0.2, shuffle=False, verbose=0)
    assert sorted(history.history) == ["loss", "val_loss"]
    check = _model(ff, GradientTape)
    check.fit(X[:40], batch_size=16, epochs=2, shuffle=False, verbose=0, validation_data=X[40:])
    for a, b in zip(model.get_weights(), check.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(DataError, match="validation_split is only supported for arrays"):
        model.fit(SliceDataset.from_tensor_slices(X).batch(8), epochs=1, validation_split=0.2, verbose=0)


def test_two_output_model_with_own_step_predicts():
    model = _model(ff, GradientTape)
    z, log_det = model.predict(X, verbose=0)
    h = np.tanh(X @ W[0])
    np.testing.assert_allclose(z, h @ W[2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(log_det, h.sum(axis=1), rtol=1e-5, atol=1e-6)


def test_as_tensorflow():
    tf = pytest.importorskip("tensorflow")
    tf_keras = pytest.importorskip("tensorflow.keras")
    model, ref = _model(ff, GradientTape), _model(tf_keras, tf.GradientTape)
    got = model.fit(X, batch_size=16, epochs=3, validation_split=0.2, shuffle=False, verbose=0)
    want = ref.fit(X, batch_size=16, epochs=3, validation_split=0.2, shuffle=False, verbose=0)
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(got.history[key], want.history[key], rtol=1e-5)
    for g, w in zip(model.get_weights(), ref.get_weights(), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)
    for g, w in zip(model.predict(X, verbose=0), ref.predict(X, verbose=0), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
