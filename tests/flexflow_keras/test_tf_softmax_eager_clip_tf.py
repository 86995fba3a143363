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


W = np.array([[1.0, 0.0, -1.0], [0.0, 1.0, 0.0]], np.float32)
X = np.array([[30.0, 0.0], [1.0, 2.0]], np.float32)
LAYER_CASES = {  # (activation, layer kind, loss, target); the eager clip holds for a layer's activation too
    "dense-nn.softmax": ("nn.softmax", "dense", "sparse_categorical_crossentropy", SPARSE),
    "dense-nn.sigmoid": ("nn.sigmoid", "dense", "binary_crossentropy", BINARY),
    "dense-math.sigmoid": ("math.sigmoid", "dense", "binary_crossentropy", BINARY),
    "activation-nn.softmax": ("nn.softmax", "activation", "sparse_categorical_crossentropy", SPARSE),
    "dense-keras-softmax": ("softmax", "dense", "sparse_categorical_crossentropy", SPARSE),
}


def _activation(t, spec):
    if spec == "softmax":
        return "softmax"
    space, name = spec.split(".")
    return getattr(getattr(t, space), name)


def _layer_loss_and_grad(t, case, wrap):
    spec, kind, loss_name, target = LAYER_CASES[case]
    act = _activation(t, spec)
    dense = t.keras.layers.Dense(3, activation=act if kind == "dense" else None)
    dense.build((None, 2))
    dense.set_weights([W, np.zeros(3, np.float32)])
    head = t.keras.layers.Activation(act) if kind == "activation" else (lambda y: y)

    def step():
        with t.GradientTape() as tape:
            loss = t.reduce_mean(getattr(t.keras.losses, loss_name)(target, head(dense(X))))
        return loss, tape.gradient(loss, dense.trainable_weights)

    loss, grads = (t.function(step) if wrap else step)()
    return float(np.asarray(loss)), [np.asarray(g) for g in grads]


@pytest.mark.parametrize("wrap", [False, True], ids=["eager", "tf.function"])
@pytest.mark.parametrize("case", sorted(LAYER_CASES))
def test_a_layers_tf_activation_clips_eagerly_as_tensorflow(case, wrap):
    """Dense(activation=tf.nn.softmax) / Activation(tf.nn.softmax) in a custom loop: tf.keras keeps
    TensorFlow's function as the activation, so eagerly its output has no logits (9.73 against 16.67 here);
    ours took Keras' softmax, which keeps them."""
    ref_loss, ref_grads = _layer_loss_and_grad(tf, case, wrap)
    loss, grads = _layer_loss_and_grad(FFTF, case, wrap)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    for g, r in zip(grads, ref_grads, strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["softmax", "sigmoid"])
def test_a_tf_activation_trains_from_logits_in_fit_and_saves_under_keras_name(name, tmp_path):
    """In fit (a graph in TensorFlow) the crossentropy reads the logits as before; the layer saves and
    loads with Keras' activation name."""
    loss = "sparse_categorical_crossentropy" if name == "softmax" else "binary_crossentropy"
    y = SPARSE if name == "softmax" else BINARY
    got = []
    for t in (tf, FFTF):
        model = t.keras.Sequential([t.keras.Input((2,)), t.keras.layers.Dense(3, activation=getattr(t.nn, name))])
        model.set_weights([W, np.zeros(3, np.float32)])
        model.compile(t.keras.optimizers.SGD(0.1), loss)
        got.append(model.fit(X, y, batch_size=2, epochs=3, shuffle=False, verbose=0).history["loss"])
    np.testing.assert_allclose(got[1], got[0], rtol=1e-5)
    assert model.layers[-1].get_config()["activation"] == name
    model.save(tmp_path / "m.keras")
    again = FFTF.keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(again.predict(X, verbose=0), model.predict(X, verbose=0), rtol=1e-6)


@pytest.mark.parametrize("name", ["softmax", "sigmoid"])
def test_removing_a_tf_activation_after_the_model_is_built_gives_logits(name):
    """Grad-CAM's "remove the last layer's softmax" (``layer.activation = None`` on a built model) with the
    activation given as tf.nn.softmax / tf.nn.sigmoid: the model's output becomes the logits, as in tf.keras."""
    outs = []
    for t in (tf, FFTF):
        model = t.keras.Sequential([t.keras.Input((2,)), t.keras.layers.Dense(3, activation=getattr(t.nn, name))])
        model.set_weights([W, np.ones(3, np.float32)])
        model.predict(X, verbose=0)
        model.layers[-1].activation = None
        outs.append(np.asarray(model(X)))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6)
    np.testing.assert_allclose(outs[1], X @ W + 1.0, rtol=1e-6)
