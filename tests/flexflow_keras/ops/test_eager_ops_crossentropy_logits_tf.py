"""keras.ops' crossentropies of an eager softmax or sigmoid output read the ``_keras_logits`` the op left
on it, as Keras 3's TensorFlow backend (_get_logits) does: a saturated output's binary crossentropy is
the logits' (30, 25, 40), not the clipped probabilities' (16.1). binary_focal_crossentropy composes
ops.binary_crossentropy while a GradientTape records, so a custom step's focal loss and its gradients
read them too (8.17 where tf.keras gives 36.38)."""

import numpy as np
import pytest

import flexflow_keras as ff
from flexflow_keras.ops.tape import GradientTape

Z = np.array([[30.0, -25.0, 1.0], [2.0, -40.0, 0.5]], "float32")
Y = np.array([[0, 1, 0], [1, 1, 0]], "float32")


@pytest.mark.parametrize("fn", ["binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy"])
@pytest.mark.parametrize("act", ["sigmoid", "softmax"])
def test_ops_crossentropy_reads_carried_logits(fn, act):
    tf = pytest.importorskip("tensorflow")
    out = []
    for lib in (ff, tf.keras):
        pred = getattr(lib.ops, act)(lib.ops.convert_to_tensor(Z))
        target = np.array([1, 0]) if fn.startswith("sparse") else Y
        out.append(np.asarray(getattr(lib.ops, fn)(target, pred)))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-5)


@pytest.mark.parametrize("kwargs", [{}, {"apply_class_balancing": True, "gamma": 1.5, "label_smoothing": 0.1}])
def test_focal_loss_under_tape_as_tf_keras(kwargs):
    tf = pytest.importorskip("tensorflow")
    x = (np.random.default_rng(0).normal(size=(16, 4)) * 20).astype("float32")
    y = np.random.default_rng(1).integers(0, 2, (16, 1)).astype("float32")
    out = []
    for lib, tape_cls in ((ff, GradientTape), (tf.keras, tf.GradientTape)):
        inp = lib.Input((4,))
        model = lib.Model(inp, lib.layers.Dense(1, activation="sigmoid")(inp))
        model.set_weights([np.linspace(-2, 2, 4).reshape(4, 1).astype("float32"), np.zeros(1, "float32")])
        with tape_cls() as tape:
            value = lib.losses.BinaryFocalCrossentropy(**kwargs)(y, model(x, training=True))
        grads = tape.gradient(value, model.trainable_variables)
        out.append((float(value), [np.asarray(g) for g in grads]))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-5)
    for g, w in zip(out[0][1], out[1][1], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
