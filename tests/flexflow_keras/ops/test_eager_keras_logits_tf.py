"""Eager softmax and sigmoid ops leave their input on the output as ``_keras_logits``, as Keras 3's
TensorFlow backend does, so a subclassed model's custom train_step computes the crossentropy of a
saturated output from the logits (tf.keras: 72.51; from the clipped probabilities: 8.82). A recurrent
layer's sigmoid is its cells' and carries none (a SimpleRNN(activation='sigmoid') output with a binary
crossentropy crashed on the missing activation_params)."""

import numpy as np
import pytest

import flexflow_keras as ff
from flexflow_keras.ops.tape import GradientTape

rng = np.random.default_rng(0)
X = (rng.normal(size=(16, 4)) * 20).astype("float32")
CASES = {"sigmoid": ("binary_crossentropy", rng.integers(0, 2, (16, 1)).astype("float32")),
         "softmax": ("categorical_crossentropy", np.eye(3, dtype="float32")[rng.integers(0, 3, 16)])}


def _subclassed(lib, act, fused):
    units = CASES[act][1].shape[1]

    class Sub(lib.Model):
        def __init__(self):
            super().__init__()
            self.d = lib.layers.Dense(units, activation=act if fused else None)

        def call(self, x):
            z = self.d(x)
            return z if fused else getattr(lib.ops, act)(z)

    model = Sub()
    model(X[:1])
    model.set_weights([np.linspace(-4, 4, 4 * units).reshape(4, units).astype("float32"),
                       np.zeros(units, "float32")])
    return model


def _loss_and_grads(lib, tape_cls, act, fused):
    loss, y = CASES[act]
    model = _subclassed(lib, act, fused)
    model.compile(optimizer="sgd", loss=loss)
    with tape_cls() as tape:
        pred = model(X, training=True)
        value = model.compute_loss(x=X, y=y, y_pred=pred)
    grads = tape.gradient(value, model.trainable_variables)
    fn = np.mean(np.asarray(lib.losses.get(loss)(y, pred)))
    return float(value), float(fn), [np.asarray(g) for g in grads]


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("act", ["sigmoid", "softmax"])
def test_subclassed_custom_step_loss_as_tf_keras(act, fused):
    tf = pytest.importorskip("tensorflow")
    got = _loss_and_grads(ff, GradientTape, act, fused)
    want = _loss_and_grads(tf.keras, tf.GradientTape, act, fused)
    np.testing.assert_allclose(got[:2], want[:2], rtol=1e-5)
    for g, w in zip(got[2], want[2], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def test_eager_ops_carry_their_input():
    z = ff.ops.convert_to_tensor(X[:, :3])
    np.testing.assert_array_equal(ff.ops.sigmoid(z)._keras_logits, z)
    np.testing.assert_array_equal(ff.ops.softmax(z)._keras_logits, z)
    # over another axis too, as Keras 3's TensorFlow backend (test_softmax_other_axis_logits_tf.py)
    np.testing.assert_array_equal(ff.ops.softmax(z, axis=0)._keras_logits, z)
    assert getattr(ff.ops.relu(z), "_keras_logits", None) is None


def test_recurrent_sigmoid_output_takes_the_probabilities_as_tf_keras():
    tf = pytest.importorskip("tensorflow")
    x = rng.random((8, 5, 3)).astype("float32")
    y = rng.integers(0, 2, (8, 1)).astype("float32")
    out = []
    for lib in (ff, tf.keras):
        model = lib.Sequential([lib.Input((5, 3)), lib.layers.SimpleRNN(1, activation="sigmoid")])
        if out:
            model.set_weights(out[0][1])
        model.compile("sgd", "binary_crossentropy")
        out.append((model.evaluate(x, y, verbose=0), model.get_weights()))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-5)
