"""TensorFlow's own ``tf.nn.softmax`` / ``tf.nn.sigmoid`` / ``tf.math.sigmoid`` leave no logits on an eager tensor
(Keras' activations do): eagerly, a Keras crossentropy of their output clips the probabilities (a saturated
sample's loss is -log(1e-7) = 16.118 and its gradient 0); inside a ``tf.function`` Keras' TensorFlow backend
finds the Softmax / Sigmoid op's input and computes from the logits. Checked against TensorFlow 2.21 / tf.keras
3.15. Ours carried the logits in both cases, so Deep Learning with Python (2nd ed.) ch. 2's from-scratch
NaiveDense loop (tf.nn.softmax, sparse_categorical_crossentropy, GradientTape) trained on other losses and
gradients than TensorFlow's."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
LOGITS = np.array([[30.0, 0.0, -5.0], [1.0, 2.0, 3.0]], np.float32)
SPARSE = np.array([1, 2])
ONE_HOT = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], np.float32)
BINARY = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0]], np.float32)

CASES = {
    "nn.softmax-sparse": lambda t, x: t.keras.losses.sparse_categorical_crossentropy(SPARSE, t.nn.softmax(x)),
    "nn.softmax-categorical": lambda t, x: t.keras.losses.categorical_crossentropy(ONE_HOT, t.nn.softmax(x)),
    "nn.sigmoid-binary": lambda t, x: t.keras.losses.binary_crossentropy(BINARY, t.nn.sigmoid(x)),
    "math.sigmoid-binary": lambda t, x: t.keras.losses.binary_crossentropy(BINARY, t.math.sigmoid(x)),
    "keras-softmax-sparse": lambda t, x: t.keras.losses.sparse_categorical_crossentropy(
        SPARSE, t.keras.activations.softmax(x)),
}


def _loss_and_grad(t, case, wrap):
    x = t.Variable(LOGITS)

    def step():
        with t.GradientTape() as tape:
            loss = t.reduce_mean(CASES[case](t, x))
        return loss, tape.gradient(loss, x)

    loss, grad = (t.function(step) if wrap else step)()
    return float(np.asarray(loss)), np.asarray(grad)


@pytest.mark.parametrize("wrap", [False, True], ids=["eager", "tf.function"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_crossentropy_of_tf_activation_as_tensorflow(case, wrap):
    ref_loss, ref_grad = _loss_and_grad(tf, case, wrap)
    loss, grad = _loss_and_grad(FFTF, case, wrap)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-4, atol=1e-6)
