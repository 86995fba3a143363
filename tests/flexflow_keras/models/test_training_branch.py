"""A subclassed model whose call() branches on `training` in Python trains the training=True path and
evaluates and predicts the training=False one, as Keras' train_step and predict call it; a model whose
call() records the same ops either way keeps one graph (one engine for fit, evaluate and predict)."""

import numpy as np

import flexflow_keras as keras
from flexflow_keras import layers

rng = np.random.default_rng(0)
X = rng.random((64, 8)).astype("float32")


class DropoutWhenTraining(keras.Model):  # ``if training:`` around a layer: published often
    def __init__(self):
        super().__init__()
        self.d, self.drop, self.o = layers.Dense(4), layers.Dropout(0.9, seed=1), layers.Dense(1)

    def call(self, x, training=False):
        x = self.d(x)
        if training:
            x = self.drop(x)
        return self.o(x)


class SoftmaxAtInference(keras.Model):  # logits for a from_logits loss, probabilities from predict
    def __init__(self):
        super().__init__()
        self.d = layers.Dense(3)

    def call(self, x, training=False):
        z = self.d(x)
        return z if training else keras.ops.softmax(z)


class PassesTheFlag(DropoutWhenTraining):
    def call(self, x, training=False):
        return self.o(self.drop(self.d(x), training=training))


def _types(graph):
    return [n.op.type_name for n in graph.nodes]


def test_fit_trains_the_training_branch_and_predict_runs_the_other():
    model = DropoutWhenTraining()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(X, np.ones((64, 1)), batch_size=16, epochs=1, verbose=0)
    assert _types(model._op_graph(None, training=True)) == ["dense", "dropout", "dense"]
    assert _types(model._op_graph(None)) == ["dense", "dense"]
    # with 90% dropout in the trained graph, the training loss sees the dropout's noise
    keras.utils.set_random_seed(3)
    noisy = model.train_on_batch(X[:16], np.ones((16, 1)))
    clean = model.test_on_batch(X[:16], np.ones((16, 1)))
    assert not np.isclose(float(np.ravel(noisy)[0]), float(np.ravel(clean)[0]))


def test_an_inference_only_softmax_is_trained_on_logits_and_predicted_as_probabilities():
    model = SoftmaxAtInference()
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit(X, rng.integers(0, 3, 64), batch_size=16, epochs=2, verbose=0, validation_split=0.25)
    assert np.isfinite(hist.history["val_loss"]).all()
    probs = model.predict(X[:5], verbose=0)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    logits = X[:5] @ model.d.get_weights()[0] + model.d.get_weights()[1]
    np.testing.assert_allclose(probs, np.exp(logits) / np.exp(logits).sum(1, keepdims=True), rtol=1e-5)


def test_a_call_without_a_branch_keeps_one_graph():
    model = PassesTheFlag()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(X, np.ones((64, 1)), batch_size=16, epochs=1, verbose=0, validation_split=0.25)
    assert model._op_graph(None, training=True) is model._op_graph(None)
    assert _types(model._op_graph(None)) == ["dense", "dropout", "dense"]
