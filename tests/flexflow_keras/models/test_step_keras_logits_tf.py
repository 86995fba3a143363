"""A custom train_step's loss of a softmax or sigmoid output reads the activation's logits, as Keras 3 on
TensorFlow does through the ``_keras_logits`` its activations leave on the output, eager tensors included.
With saturated outputs the numbers differ from the clipped probabilities' (a sigmoid's binary crossentropy
read 11.8 where tf.keras reads 60.4): a traced train_step's ``self(x)`` was a copy of the output that hid its
activation, and an eager ``model(x)`` carried no logits for ``compute_loss`` or a ``keras.losses`` object."""

import numpy as np
import pytest

import flexflow_keras
from flexflow_keras.ops.tape import GradientTape

rng = np.random.default_rng(0)
X = (rng.normal(size=(16, 4)) * 20).astype("float32")
Y_BIN = rng.integers(0, 2, (16, 1)).astype("float32")
Y_CAT = np.eye(3, dtype="float32")[rng.integers(0, 3, 16)]
CASES = {"sigmoid": ("binary_crossentropy", Y_BIN), "softmax": ("categorical_crossentropy", Y_CAT)}
CLASSES = {"sigmoid": "BinaryCrossentropy", "softmax": "CategoricalCrossentropy"}


def _tape(lib):
    if lib is flexflow_keras:
        return GradientTape
    import tensorflow as tf

    return tf.GradientTape


def _kernel(units):
    return np.linspace(-4.0, 4.0, 4 * units).reshape(4, units).astype("float32")


def _model(lib, act, cls):
    inp = lib.Input((4,))
    units = 1 if act == "sigmoid" else 3
    out = lib.layers.Dense(units, activation=act)(inp)
    model = cls(inp, out)
    model.set_weights([_kernel(units), np.zeros(units, "float32")])
    return model


def _traced_class(lib):
    tape_cls = _tape(lib)

    class Stepped(lib.Model):
        def train_step(self, data):
            x, y = data
            with tape_cls() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            for m in self.metrics:
                m.update_state(loss) if m.name == "loss" else m.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

    return Stepped


def _fit(lib, act):
    loss, y = CASES[act]
    model = _model(lib, act, _traced_class(lib))
    model.compile(lib.optimizers.SGD(0.01), loss, metrics=[loss, "accuracy"])
    history = model.fit(X, y, epochs=2, batch_size=8, verbose=0, shuffle=False).history
    return history, model.evaluate(X, y, batch_size=8, verbose=0, return_dict=True), model.get_weights()


@pytest.mark.parametrize("act", sorted(CASES))
def test_traced_train_step_as_tf_keras(act):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _fit(flexflow_keras, act), _fit(keras, act)
    assert sorted(ours[0]) == sorted(theirs[0])
    for key in theirs[0]:
        np.testing.assert_allclose(ours[0][key], theirs[0][key], rtol=1e-5, err_msg=key)
    for key in theirs[1]:
        np.testing.assert_allclose(ours[1][key], theirs[1][key], rtol=1e-5, err_msg=key)
    for a, b in zip(ours[2], theirs[2], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _eager(lib, act):
    loss, y = CASES[act]
    model = _model(lib, act, lib.Model)
    model.compile(lib.optimizers.SGD(0.01), loss)
    loss_obj = getattr(lib.losses, CLASSES[act])()
    with _tape(lib)() as tape:
        y_pred = model(X, training=True)
        value = model.compute_loss(x=X, y=y, y_pred=y_pred)
    grads = tape.gradient(value, model.trainable_variables)
    y_pred = model(X)
    return ([float(value), float(loss_obj(y, y_pred)), float(np.mean(getattr(lib.losses, loss)(y, y_pred)))],
            [np.asarray(g) for g in grads])


@pytest.mark.parametrize("act", sorted(CASES))
def test_eager_output_carries_its_logits(act):
    values, _ = _eager(flexflow_keras, act)
    logits = X.astype(np.float64) @ _kernel(1 if act == "sigmoid" else 3)
    if act == "sigmoid":  # the crossentropies of the logits, by hand
        want = np.mean(np.maximum(logits, 0) - logits * Y_BIN + np.log1p(np.exp(-np.abs(logits))))
    else:
        top = logits.max(axis=1)
        lse = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
        want = np.mean(lse - (logits * Y_CAT).sum(axis=1))
    assert want > 17.0  # saturated: the clipped probabilities' crossentropy stays below -log(1e-7) = 16.1
    np.testing.assert_allclose(values, want, rtol=1e-5)


@pytest.mark.parametrize("act", sorted(CASES))
def test_eager_loss_and_gradient_as_tf_keras(act):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _eager(flexflow_keras, act), _eager(keras, act)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    for a, b in zip(ours[1], theirs[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _own_step(lib):
    tape_cls = _tape(lib)

    class OwnLoss(lib.Model):
        """The keras.io pattern: its own loss object and tracker, no compute_loss (runs eagerly here)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_fn = lib.losses.BinaryCrossentropy()
            self.tracker = lib.metrics.Mean(name="loss")

        @property
        def metrics(self):
            return [self.tracker]

        def train_step(self, data):
            x, y = data
            with tape_cls() as tape:
                loss = self.loss_fn(y, self(x, training=True))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            self.tracker.update_state(loss)
            return {"loss": self.tracker.result()}

    model = _model(lib, "sigmoid", OwnLoss)
    model.compile(lib.optimizers.SGD(0.01))
    history = model.fit(X, Y_BIN, epochs=2, batch_size=8, verbose=0, shuffle=False).history
    return history["loss"], model.get_weights()


def test_own_loss_object_in_eager_step_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _own_step(flexflow_keras), _own_step(keras)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    for a, b in zip(ours[1], theirs[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
