"""A second derivative through a loss (keras.io's debugging tips: ``tape2.gradient(tape1.gradient(loss, w), w)``
of a softmax model's compiled sparse crossentropy) equals TensorFlow's. The loss had no backward as ops, so the
outer gradient stopped with 'second-order gradients through loss are not supported'. The crossentropies of
softmax / sigmoid outputs (their logits) and the mean squared error now have one; a crossentropy of plain
probabilities still stops with that error, naming from_logits."""

import numpy as np
import pytest

import flexflow_keras
from flexflow_keras.ops.tape import GradientTape

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
pytestmark = pytest.mark.tf

RS = np.random.RandomState(0)
X = RS.rand(6, 5).astype("float32")
LABELS = {"sparse": RS.randint(0, 3, 6), "onehot": np.eye(3, dtype="float32")[RS.randint(0, 3, 6)],
          "binary": RS.randint(0, 2, (6, 3)).astype("float32"), "real": RS.randn(6, 3).astype("float32")}
CASES = [("softmax", "sparse", lambda L: L.SparseCategoricalCrossentropy()),
         ("softmax", "onehot", lambda L: L.CategoricalCrossentropy(label_smoothing=0.2)),
         ("linear", "sparse", lambda L: L.SparseCategoricalCrossentropy(from_logits=True)),
         ("sigmoid", "binary", lambda L: L.BinaryCrossentropy()),
         ("tanh", "real", lambda L: L.MeanSquaredError())]


def _second(lib, tape_cls, act, labels, loss_fn):
    model = lib.Sequential([lib.Input((5,)), lib.layers.Dense(4, activation="relu"),
                            lib.layers.Dense(3, activation=act)])
    model.set_weights([np.random.RandomState(i).randn(*w.shape).astype("float32") for i, w in
                       enumerate(model.get_weights())])
    w = model.trainable_variables
    with tape_cls() as outer:
        with tape_cls() as inner:
            loss = loss_fn(lib.losses)(LABELS[labels], model(X, training=True))
        first = inner.gradient(loss, w)
    second = outer.gradient(first, w)
    return [np.asarray(g) for g in first], [None if g is None else np.asarray(g) for g in second]


@pytest.mark.parametrize("act,labels,loss_fn", CASES, ids=[f"{a}-{lab}" for a, lab, _ in CASES])
def test_second_derivative_of_a_loss_as_tensorflow(act, labels, loss_fn):
    ours = _second(flexflow_keras, GradientTape, act, labels, loss_fn)
    theirs = _second(keras, tf.GradientTape, act, labels, loss_fn)
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1], strict=True):
        if b is None:
            assert a is None or not np.any(a)
            continue
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5 * max(1.0, np.abs(b).max()))


def test_a_crossentropy_of_probabilities_names_from_logits():
    model = flexflow_keras.Sequential([flexflow_keras.Input((5,)), flexflow_keras.layers.Dense(3)])
    w = model.trainable_variables
    with pytest.raises(Exception, match="from_logits"):
        with GradientTape() as outer:
            with GradientTape() as inner:
                probs = flexflow_keras.ops.clip(model(X), 0.01, 1.0)  # probabilities with no logits behind them
                loss = flexflow_keras.losses.sparse_categorical_crossentropy(LABELS["sparse"], probs)
            first = inner.gradient(loss, w)
        outer.gradient(first, w)
