"""A train_step / test_step that takes its batch apart by key (keras.io's transformer_asr: ``source =
batch["source"]``, the decoder input and labels sliced from ``batch["target"]``, ``self([source, dec_input])``,
one-hot labels and a padding mask as sample weights handed to ``self.compute_loss``, a Mean tracking the loss) runs eagerly, as
written. Before, fit traced the model's call() on the dataset's dict and crashed (``inputs[0]``: KeyError 0),
and a traced step would have been handed an (x, y) tuple it cannot index by key. Losses, validation losses,
evaluate and weights match tf.keras 3 on TensorFlow."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.models import step_hooks  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
CLASSES = 7


def _model(T, K):
    class Seq2Seq(K.Model):
        def __init__(self):
            super().__init__()
            self.loss_metric = K.metrics.Mean(name="loss")
            self.enc = K.layers.Dense(4, activation="tanh")
            self.emb = K.layers.Embedding(CLASSES, 4)
            self.out = K.layers.Dense(CLASSES)

        def call(self, inputs):
            source, target = inputs[0], inputs[1]
            ctx = K.ops.mean(self.enc(source), axis=1, keepdims=True)
            return self.out(self.emb(target) + ctx)

        @property
        def metrics(self):
            return [self.loss_metric]

        def train_step(self, batch):
            source = batch["source"]
            target = batch["target"]
            with T.GradientTape() as tape:
                preds = self([source, target[:, :-1]])
                one_hot = T.one_hot(target[:, 1:], depth=CLASSES)
                mask = T.math.logical_not(T.math.equal(target[:, 1:], 0))
                loss = self.compute_loss(None, one_hot, preds, sample_weight=mask)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            self.loss_metric.update_state(loss)
            return {"loss": self.loss_metric.result()}

        def test_step(self, batch):
            target = batch["target"]
            preds = self([batch["source"], target[:, :-1]])
            one_hot = T.one_hot(target[:, 1:], depth=CLASSES)
            mask = T.math.logical_not(T.math.equal(target[:, 1:], 0))
            self.loss_metric.update_state(self.compute_loss(None, one_hot, preds, sample_weight=mask))
            return {"loss": self.loss_metric.result()}

    return Seq2Seq()


def _data():
    rng = np.random.default_rng(3)
    source = rng.standard_normal((8, 5, 3)).astype("float32")
    target = rng.integers(1, CLASSES, (8, 6)).astype("int32")
    target[::2, 4:] = 0  # padding, masked out of the loss
    return source, target


def _run(T, K, weights=None):
    source, target = _data()
    m = _model(T, K)
    m([source[:2], target[:2, :-1]])
    if weights is not None:
        m.set_weights(weights)
    w0 = m.get_weights()
    m.compile(optimizer=K.optimizers.SGD(0.5),
              loss=K.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1))
    ds = T.data.Dataset.from_tensor_slices({"source": source[:6], "target": target[:6]}).batch(3)
    val = T.data.Dataset.from_tensor_slices({"source": source[6:], "target": target[6:]}).batch(2)
    h = m.fit(ds, validation_data=val, epochs=3, verbose=0)
    ev = m.evaluate(val, verbose=0)
    return w0, h.history, ev, m.get_weights()


def test_a_step_taking_its_batch_by_key_runs_eagerly():
    m = _model(FFTF, ff)
    assert step_hooks.eager_reason(m, "train_step") is not None
    assert step_hooks.eager_reason(m, "test_step") is not None


def test_a_step_taking_its_batch_by_key_trains_as_tf_keras():
    tk.utils.set_random_seed(0)
    w0, th, tev, tw = _run(tf, tk)
    _, fh, fev, fw = _run(FFTF, ff, w0)
    np.testing.assert_allclose(fh["loss"], th["loss"], rtol=1e-5)
    np.testing.assert_allclose(fh["val_loss"], th["val_loss"], rtol=1e-5)
    np.testing.assert_allclose(np.ravel(fev)[0], np.ravel(tev)[0], rtol=1e-5)
    for a, b in zip(fw, tw, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
