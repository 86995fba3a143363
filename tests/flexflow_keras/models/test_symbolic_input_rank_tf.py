"""Keras 3's input rank rule on symbolic tensors: a functional model called on a tensor one rank short of an
Input whose last dim is 1 (or one rank longer, ending in 1) expands (squeezes) it, as on arrays. keras.io's
trainer pattern wraps ``keras.Model(Input((28, 28, 1)), ...)`` in a Model whose train_step calls
``self.model(x)`` on (N, 28, 28) MNIST: the traced step stopped on "Input 0 of layer 'functional' is
incompatible: expected shape (None, 28, 28, 1), got shape (None, 28, 28)"."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tf_keras = pytest.importorskip("tensorflow.keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

rs = np.random.RandomState(0)
X = rs.rand(48, 6, 5)  # float64, as MNIST / 255.0
Y = rs.randint(0, 4, 48).astype("uint8")


def _trainer(lib, gradient_tape):
    class MyTrainer(lib.Model):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def train_step(self, data):
            x, y = data
            with gradient_tape() as tape:
                y_pred = self.model(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))  # noqa: B905 (the guides)
            return {"loss": loss}

        def call(self, x):
            return self.model(x)

    inp = lib.Input((6, 5, 1))
    out = lib.layers.Dense(4, activation="softmax")(lib.layers.Dense(8, activation="relu")(lib.layers.Flatten()(inp)))
    return MyTrainer(lib.Model(inp, out))


def _run(lib, gradient_tape, weights):
    trainer = _trainer(lib, gradient_tape)
    trainer.model.set_weights(weights)
    trainer.compile(lib.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    trainer.fit(X, Y, epochs=2, batch_size=16, verbose=0, shuffle=False)
    return trainer.evaluate(X, Y, verbose=0), trainer.predict(X[:5], verbose=0), trainer.model.get_weights()


def test_traced_train_step_calls_a_model_one_rank_short():
    weights = [rs.randn(30, 8).astype("float32") * 0.3, np.zeros(8, "float32"),
               rs.randn(8, 4).astype("float32") * 0.3, np.zeros(4, "float32")]
    from flexflow_keras.ops.tape import GradientTape

    got = _run(ff, GradientTape, weights)
    want = _run(tf_keras, tf.GradientTape, weights)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-7)
    for g, w in zip(got[2], want[2], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,data_shape", [((6, 5, 1), (6, 5)), ((6,), (6, 1))])
def test_functional_graph_calling_a_model_adjusts_the_rank(shape, data_shape):
    inner_in = ff.Input(shape)
    inner = ff.Model(inner_in, ff.layers.Flatten()(inner_in))
    outer_in = ff.Input(data_shape)
    outer = ff.Model(outer_in, inner(outer_in))
    x = rs.rand(3, *data_shape).astype("float32")
    np.testing.assert_allclose(outer.predict(x, verbose=0), x.reshape(3, -1))
