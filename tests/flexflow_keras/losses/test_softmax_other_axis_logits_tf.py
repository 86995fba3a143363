"""A softmax over an axis other than the last leaves its logits (``_keras_logits``) as Keras 3's TensorFlow
backend does for every axis, and the crossentropies read them; ``CategoricalCrossentropy(axis=1)`` (a
channels_first class axis) is computed, eagerly, under a GradientTape and in a compiled model, as tf.keras
3.15. Before, ops.softmax(x, axis=1) carried no logits and a crossentropy with axis=1 was refused eagerly
("supports only the last axis") and computed over the last axis in a graph."""

import numpy as np
import pytest

import flexflow_keras as ff

rng = np.random.default_rng(0)
X = (rng.normal(size=(2, 3, 4)) * 5).astype("float32")
Y_AXIS1 = np.eye(3, dtype="float32")[[[0, 1, 2, 0], [2, 2, 1, 0]]].transpose(0, 2, 1)  # one-hot over axis 1
Y_LAST = np.eye(4, dtype="float32")[[[0, 1, 2], [3, 0, 1]]]


def _eager(lib):
    p = lib.ops.softmax(X, axis=1)
    losses = lib.losses
    return [hasattr(p, "_keras_logits"),
            float(losses.CategoricalCrossentropy(axis=1)(Y_AXIS1, p)),
            float(losses.CategoricalCrossentropy(axis=1, label_smoothing=0.2)(Y_AXIS1, p)),
            np.asarray(losses.categorical_crossentropy(Y_AXIS1, p, axis=1)),
            np.asarray(lib.ops.categorical_crossentropy(Y_AXIS1, p, axis=1)),
            float(losses.CategoricalCrossentropy()(Y_LAST, p)),  # the logits, softmax over the last axis
            float(losses.CategoricalCrossentropy(axis=1)(Y_AXIS1, np.asarray(p))),
            float(losses.BinaryCrossentropy()(Y_AXIS1[..., :4], p))]


def test_eager_softmax_other_axis_as_tf_keras():
    tf = pytest.importorskip("tensorflow")
    got, want = _eager(ff), _eager(tf.keras)
    assert got[0] is want[0] is True
    for g, w in zip(got[1:], want[1:], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _fit(lib, loss_axis, tape):
    inp = lib.Input((3, 4))
    out = lib.layers.Softmax(axis=1)(lib.layers.Dense(4)(inp))
    model = lib.Model(inp, out)
    model.set_weights([np.linspace(-1, 1, w.size).reshape(w.shape).astype("float32") for w in model.get_weights()])
    loss = lib.losses.CategoricalCrossentropy(axis=loss_axis)
    y = Y_AXIS1 if loss_axis == 1 else Y_LAST
    if tape:
        import tensorflow as tf

        from flexflow_keras.ops.tape import GradientTape

        with (tf.GradientTape if lib is not ff else GradientTape)() as t:
            value = loss(y, model(X))
        return [float(value)] + [np.asarray(g) for g in t.gradient(value, model.trainable_variables)]
    model.compile(lib.optimizers.SGD(0.1), loss)
    return model.fit(X, y, epochs=3, batch_size=2, verbose=0).history["loss"] + model.get_weights()


@pytest.mark.parametrize("tape", [False, True], ids=["fit", "tape"])
@pytest.mark.parametrize("loss_axis", [1, -1])
def test_softmax_layer_other_axis_as_tf_keras(loss_axis, tape):
    tf = pytest.importorskip("tensorflow")
    got, want = _fit(ff, loss_axis, tape), _fit(tf.keras, loss_axis, tape)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
