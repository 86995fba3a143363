"""Keras 2's custom train_step (the keras-io "trainer pattern"): a Model wrapping another, predicting
through ``self.model(x)`` under a ``tf.GradientTape``, its loss from ``self.compiled_loss`` and its
metrics through ``self.compiled_metrics``. It trains exactly as plain fit on the wrapped model does, the
training graph holds one forward pass (the wrapped call is the recorded one), and under
``python -m flexflow_keras`` `tf.GradientTape` is a tape such a step may enter (it records nothing
there), and an eager tape outside a step."""

from __future__ import annotations

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import layers
from flexflow_keras.ops.tape import GradientTape

rng = np.random.default_rng(0)
X = rng.random((64, 6, 6)).astype("float32")
Y = rng.integers(0, 4, 64)


class Trainer(keras.Model):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def train_step(self, data):
        x, y = data
        with GradientTape() as tape:
            y_pred = self.model(x, training=True)
            loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply_gradients(zip(gradients, trainable_vars, strict=True))
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}

    def call(self, x):
        return self.model(x)


def _inner(seed=1):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((6, 6)), layers.Flatten(), layers.Dense(16, activation="relu"),
                             layers.Dense(4, activation="softmax")])


@pytest.fixture(autouse=True)
def _no_search(request):
    keras.config.set(only_data_parallel=True)
    request.addfinalizer(keras.config.reset)


def _fit_both(trainer_class, epochs: int):
    """A plain model and `trainer_class` wrapping a twin of it (same weights), both fitted alike."""
    plain, wrapped = _inner(), _inner()
    wrapped.set_weights(plain.get_weights())
    trainer = trainer_class(wrapped)
    hists = []
    for m in (plain, trainer):
        m.compile(keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        hists.append(m.fit(X, Y, epochs=epochs, batch_size=16, shuffle=False, verbose=0).history)
    return plain, trainer, hists[0], hists[1]


def test_trainer_pattern_trains_as_plain_fit():
    plain, trainer, h_plain, h_trainer = _fit_both(Trainer, epochs=2)
    np.testing.assert_allclose(h_trainer["loss"], h_plain["loss"], rtol=1e-6)
    np.testing.assert_allclose(h_trainer["accuracy"], h_plain["accuracy"], rtol=1e-6)
    for a, b in zip(trainer.get_weights(), plain.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    dense = [n for n in trainer._engine.tgraph.graph.nodes if type(n.op).__name__ == "LinearOp"]
    assert len(dense) == 2  # one forward pass: the traced step's prediction is the recorded one


def test_a_second_call_on_the_same_tensor_outside_a_step_is_not_merged():
    """The memo only serves the step trace: a layer applied twice to one tensor in call() stays two calls."""
    inp = keras.Input((4,))
    drop = layers.Dropout(0.5)
    out = layers.Add()([drop(inp), drop(inp)])
    model = keras.Model(inp, out)
    assert len([n for n in model._op_graph().nodes if type(n.op).__name__ == "DropoutOp"]) == 2


def test_gradient_tape_outside_a_step_is_an_eager_tape():
    x = keras.ops.convert_to_tensor(np.ones(2, "float32"))
    with GradientTape() as tape:
        tape.watch(x)
        y = keras.ops.sum(x * 3.0)
    np.testing.assert_allclose(tape.gradient(y, x), [3.0, 3.0])


def test_compiled_metrics_and_compiled_loss_outside_a_step():
    model = _inner()
    model.compile("sgd", loss="sparse_categorical_crossentropy")
    model.compiled_metrics.update_state(Y[:2], np.full((2, 4), 0.25, "float32"))  # accepted, as in Keras 3
    loss = model.compiled_loss(Y[:2], np.full((2, 4), 0.25, "float32"))
    assert float(np.asarray(loss)) == pytest.approx(np.log(4.0), rel=1e-5)


class TrainerWithoutCall(Trainer):
    call = keras.layers.Layer.call  # keras-io's trainer pattern as often published: no call() at all


def test_a_trainer_without_call_trains_through_the_model_it_wraps():
    plain, trainer, h_plain, h_trainer = _fit_both(TrainerWithoutCall, epochs=1)
    np.testing.assert_allclose(h_trainer["loss"], h_plain["loss"], rtol=1e-6)
    np.testing.assert_allclose(trainer.predict(X[:5], verbose=0), plain.predict(X[:5], verbose=0), rtol=1e-6)


def test_a_model_without_call_is_told_to_add_one():
    from flexflow_keras.errors import GraphError

    class NoCall(keras.Model):
        def __init__(self):
            super().__init__()
            self.a, self.b = _inner(1), _inner(2)

        def train_step(self, data):
            return {}

    with pytest.raises(GraphError, match=r"'no_call' \(NoCall\) has no call\(\) method: .* \(its train_step wraps 2 "
                                         r"models: .*Add `def call\(self, inputs, training=False\): return self\.a"):
        NoCall().predict(X[:2], verbose=0)
