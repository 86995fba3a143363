"""A subclassed model whose call() branches on `training` predicts and evaluates with its training=False
branch, as Keras calls call(x, training=False) there (models/call_mode.py): keras.io's RealNVP runs its flow
backwards at inference (``direction = -1 if training else 1``) and its ``model.predict(samples)`` gave the
forward flow's numbers (37% off TensorFlow's) with only a warning; a call(x, training=None) doubling in
training and tripling otherwise predicted the doubled value. fit still trains the training=True graph,
and Adam's moments go on across fit, predict, evaluate, fit."""

import numpy as np
import pytest

import flexflow_keras as ff

X = np.linspace(-1, 1, 24, dtype="float32").reshape(8, 3)
Y = np.ones((8, 1), "float32")
W = [np.array([[0.5], [-0.25], [0.75]], "float32"), np.array([0.1], "float32")]


def _model(lib, default):
    class Branching(lib.Model):
        def __init__(self):
            super().__init__()
            self.dense = lib.layers.Dense(1)

        def call(self, x, training=default):
            return self.dense(x) * (2.0 if training else 3.0)

    model = Branching()
    model(X[:1])
    model.set_weights(W)
    return model


@pytest.mark.parametrize("default", [None, True])
def test_predict_and_evaluate_take_the_inference_branch(default):
    model = _model(ff, default)
    dense = X @ W[0] + W[1]
    np.testing.assert_allclose(model.predict(X, verbose=0), 3 * dense, rtol=1e-6)
    model.compile(ff.optimizers.SGD(0.01), "mse")
    np.testing.assert_allclose(model.evaluate(X, Y, verbose=0), np.mean((3 * dense - Y) ** 2), rtol=1e-6)
    loss = model.train_on_batch(X, Y)  # the training branch, after an engine for the other one
    np.testing.assert_allclose(loss, np.mean((2 * dense - Y) ** 2), rtol=1e-6)
    np.testing.assert_allclose(model.predict(X, verbose=0), 3 * (X @ model.get_weights()[0] + model.get_weights()[1]),
                               rtol=1e-5)


class _PredictEachEpoch:
    """A callback predicting inside fit: fit's engine must stay under it, and the prediction is the
    training=False branch's, as Keras'."""

    def __init__(self, lib):
        base = lib.callbacks.Callback
        self.seen = seen = []

        class Cb(base):
            def on_epoch_end(self, epoch, logs=None):
                seen.append(self.model.predict(X, verbose=0))
        self.cb = Cb()


def _run(lib, default):
    model = _model(lib, default)
    model.compile(lib.optimizers.Adam(0.05), "mse")
    cb = _PredictEachEpoch(lib)
    h = model.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[cb.cb],
                  validation_data=(X[:5], Y[:5] * 0.5))
    out = {"fit1": h.history["loss"], "val1": h.history["val_loss"], "cb_pred": np.stack(cb.seen)}
    out["pred"] = model.predict(X, verbose=0)
    out["eval"] = model.evaluate(X, Y, verbose=0)
    h = model.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0, validation_split=0.25)
    out["fit2"], out["val2"] = h.history["loss"], h.history["val_loss"]
    out["weights"] = model.get_weights()
    out["pred2"] = model.predict(X, verbose=0)
    return out


@pytest.mark.parametrize("default", [None, True])
def test_fit_predict_fit_as_tensorflow(default):
    pytest.importorskip("tensorflow")
    tf_keras = pytest.importorskip("tensorflow.keras")
    got, want = _run(ff, default), _run(tf_keras, default)
    for key in ("fit1", "val1", "cb_pred", "pred", "eval", "fit2", "val2", "pred2"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-7, err_msg=key)
    for g, w in zip(got["weights"], want["weights"], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)
