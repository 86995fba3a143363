"""A layer whose call() assigns a variable a computed value (keras.io's mixture of experts:
``self.expert_usage_count.assign(tf.tensor_scatter_nd_add(...))``) cannot be held by a traced step. fit and
evaluate of a model with its own train_step / test_step then run those eagerly, as Keras does, with a log line
naming the layer and the variable; compile(run_eagerly=True) runs an own train_step eagerly from the start;
a model on Keras' own step stops with an error naming the layer, the attribute and the variable's path.
Before, fit stopped with "Variable 'variable'.assign(...) inside a layer's call()" in every case. Compared with
tf.keras 3.15: losses, weights and the counter."""

import logging

import numpy as np
import pytest

import flexflow_keras as ff
from flexflow_keras.errors import GraphError
from flexflow_keras.ops.tape import GradientTape

tf = pytest.importorskip("tensorflow")
rs = np.random.RandomState(0)
X = rs.rand(12, 3).astype("float32")
Y = rs.rand(12, 2).astype("float32")
W = [rs.randn(3, 2).astype("float32") * 0.5, np.zeros(2, "float32")]


def _model(lib, tape_cls, own_steps=True, run_eagerly=False, method="assign"):
    class Counting(lib.layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.dense = lib.layers.Dense(2)

        def build(self, shape):
            self.usage = self.add_weight(shape=(3,), initializer="zeros", trainable=False, name="usage")

        def call(self, x):
            if method == "assign":
                self.usage.assign(self.usage + lib.ops.sum(x, axis=0))
            else:
                self.usage.assign_add(lib.ops.sum(x, axis=0))
            return self.dense(x)

    class Net(lib.Model):
        def __init__(self):
            super().__init__()
            self.block = Counting(name="counting")

        def call(self, x):
            return self.block(x)

    class OwnSteps(Net):
        def train_step(self, data):
            x, y = data
            with tape_cls() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(x, y, y_pred)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            return {"step_loss": loss}

        def test_step(self, data):
            x, y = data
            return {"step_loss": self.compute_loss(x, y, self(x, training=False))}

    model = (OwnSteps if own_steps else Net)()
    model(X[:1])
    model.block.dense.set_weights(W)
    model.block.usage.assign(np.zeros(3, "float32"))
    model.compile(lib.optimizers.SGD(0.1), "mse", run_eagerly=run_eagerly)
    return model


def _train(lib, tape_cls, run_eagerly=False, method="assign"):
    model = _model(lib, tape_cls, run_eagerly=run_eagerly, method=method)
    hist = model.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["step_loss"]
    score = model.evaluate(X, Y, batch_size=4, verbose=0)
    return hist, score, model.block.dense.get_weights(), np.asarray(model.block.usage.numpy())


@pytest.mark.parametrize(("run_eagerly", "method"), [(False, "assign"), (True, "assign"), (False, "assign_add")])
def test_own_steps_run_eagerly_as_tf_keras(run_eagerly, method, caplog):
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        ours = _train(ff, GradientTape, run_eagerly, method)
    theirs = _train(tf.keras, tf.GradientTape, run_eagerly, method)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5)
    for a, b in zip(ours[2], theirs[2], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-5)
    text = caplog.text
    if run_eagerly:
        assert "train_step() was compiled with run_eagerly=True" in text
    else:
        assert "layer 'counting' (Counting), self.usage (path 'own_steps/counting/usage')" in text
        assert "so fit() runs it as written" in text and "so evaluate() runs it as written" in text


def test_keras_own_step_names_the_layer_and_the_variable():
    model = _model(ff, GradientTape, own_steps=False)
    with pytest.raises(GraphError, match=r"Layer 'counting' \(Counting\), self\.usage \(path 'net/counting/usage'\)"):
        model.fit(X, Y, batch_size=4, epochs=1, verbose=0)
