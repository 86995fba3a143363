"""A subclassed model whose call() branches on `training` in Python is traced with training=True, as
Keras' train_step calls it: a Dropout under ``if training:`` is in the graph fit trains (it was silently
left out), and evaluate and predict run that graph with the Dropout off. A branch that does more than
switch such layers (a softmax only at inference) is recorded as a second graph that evaluate and predict run
(models/call_mode.py), with a warning naming the model: fit's validation still runs the training one."""

import logging

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


class SoftmaxAtInference(keras.Model):
    def __init__(self):
        super().__init__()
        self.d = layers.Dense(3)

    def call(self, x, training=False):
        z = self.d(x)
        return z if training else keras.ops.softmax(z)


class RandomEachTrace(DropoutWhenTraining):  # a new seed per trace is no other computation
    def __init__(self):
        super().__init__()
        self.seeds = keras.random.SeedGenerator(3)

    def call(self, x, training=None):
        return self.o(keras.random.dropout(self.d(x), 0.5, seed=self.seeds))


def _types(model):
    return [n.op.type_name for n in model._op_graph(None).nodes]


def _fit(model, loss="mse", y=None):
    model.compile(optimizer="sgd", loss=loss)
    return model.fit(X, np.ones((64, 1)) if y is None else y, batch_size=16, epochs=1, verbose=0)


def test_fit_trains_the_dropout_of_a_training_branch(caplog):
    model = DropoutWhenTraining()
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        _fit(model)
    assert _types(model) == ["dense", "dropout", "dense"]
    assert not [r for r in caplog.records if "records other ops" in r.getMessage()]
    # predict runs the graph with the Dropout off: the plain two Dense layers
    (k1, b1), (k2, b2) = model.d.get_weights(), model.o.get_weights()
    np.testing.assert_allclose(model.predict(X[:4], verbose=0), (X[:4] @ k1 + b1) @ k2 + b2, rtol=1e-5, atol=1e-6)


def test_an_inference_only_computation_runs_at_inference_without_a_warning(caplog):
    model = SoftmaxAtInference()
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        _fit(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True), rng.integers(0, 3, 64))
    assert _types(model) == ["dense"]  # fit trained the logits, as Keras' train_step does
    # every path runs the graph Keras runs (fit's validation included), so there is nothing to warn about
    assert not [r for r in caplog.records if "records other ops" in r.getMessage()]
    # predict runs the training=False branch, as Keras: the softmax of the trained logits
    k, b = model.d.get_weights()
    z = X[:4] @ k + b
    want = np.exp(z - z.max(axis=1, keepdims=True))
    np.testing.assert_allclose(model.predict(X[:4], verbose=0), want / want.sum(axis=1, keepdims=True), rtol=1e-5)


def test_random_ops_seeded_per_trace_are_not_a_branch(caplog):
    model = RandomEachTrace()
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        _fit(model)
    assert not [r for r in caplog.records if "records other ops" in r.getMessage()]
