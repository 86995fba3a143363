"""Crossentropy metrics of a softmax or sigmoid output are computed from its logits, as Keras 3's TensorFlow
backend computes them in a traced step (``_keras_logits``, metrics/logits.py). They were computed from the
probabilities: saturated outputs logged a categorical crossentropy of 10.1 where tf.keras logs 28.9, and a
binary crossentropy metric of a softmax output (or a categorical one of a sigmoid output) differed
everywhere."""

import numpy as np
import pytest

import flexflow_keras
from flexflow_keras import config

RNG = np.random.RandomState(0)
X = (RNG.randn(64, 8) * 4).astype("float32")
LABELS = RNG.randint(0, 3, 64)
KERNEL = (np.random.RandomState(5).randn(8, 3) * 3).astype("float32")


def _logsumexp(z):
    m = z.max(-1, keepdims=True)
    return (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[:, 0]


def _model(lib, act: str, layer_act: bool):
    inp = lib.Input((8,))
    if layer_act:  # the activation as a layer of its own
        out = lib.layers.Activation(act)(lib.layers.Dense(3)(inp))
    else:  # fused into the Dense
        out = lib.layers.Dense(3, activation=act)(inp)
    m = lib.Model(inp, out)
    m.set_weights([KERNEL, np.zeros(3, "float32")])
    return m


def _logs(lib, act: str, layer_act: bool = False, loss: str = "categorical_crossentropy", degree: int = 1):
    if lib is flexflow_keras:
        config.reset()
        config.set(cpus=2, data_parallel_degree=degree)

    def my_ce(yt, yp):
        return lib.losses.categorical_crossentropy(yt, yp)

    def my_bce(yt, yp):
        return lib.losses.binary_crossentropy(yt, yp)

    m = _model(lib, act, layer_act)
    y = np.eye(3, dtype="float32")[LABELS]
    m.compile("sgd", loss, metrics=["categorical_crossentropy", "binary_crossentropy",
                                    lib.metrics.CategoricalCrossentropy(name="cce"),
                                    lib.metrics.BinaryCrossentropy(name="bce"), my_ce, my_bce, "accuracy", "mse"])
    out = m.evaluate(X, y, batch_size=32, verbose=0, return_dict=True)
    m.compile("sgd", "sparse_categorical_crossentropy",
              metrics=["sparse_categorical_crossentropy", lib.metrics.SparseCategoricalCrossentropy(name="scce")])
    out.update({f"sparse_{k}": v for k, v in m.evaluate(X, LABELS, batch_size=32, verbose=0, return_dict=True).items()})
    return {k: float(v) for k, v in out.items()}


@pytest.mark.parametrize("act", ["softmax", "sigmoid"])
def test_crossentropy_metrics_read_the_logits(act):
    logs = _logs(flexflow_keras, act)
    z = X.astype(np.float64) @ KERNEL
    cce = float(np.mean(_logsumexp(z) - z[np.arange(64), LABELS]))
    t = np.eye(3)[LABELS]
    bce = float(np.mean(np.mean(np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z))), -1)))
    for key in ("categorical_crossentropy", "cce", "my_ce", "sparse_sparse_categorical_crossentropy", "sparse_scce"):
        assert logs[key] == pytest.approx(cce, rel=1e-5), key
    for key in ("binary_crossentropy", "bce", "my_bce"):
        assert logs[key] == pytest.approx(bce, rel=1e-5), key
    assert cce > 20  # saturated: the probabilities' clipped crossentropy would be near 10


def test_the_split_batch_gives_the_same_metrics():
    one = _logs(flexflow_keras, "sigmoid", degree=1)
    two = _logs(flexflow_keras, "sigmoid", degree=2)
    assert two == pytest.approx(one, rel=1e-6)


def test_a_metric_without_crossentropy_reads_the_probabilities():
    m = _model(flexflow_keras, "sigmoid", False)
    m.compile("sgd", "mse", metrics=["mse", "accuracy"])
    m.evaluate(X, np.eye(3, dtype="float32")[LABELS], verbose=0)
    assert not any(m._ff_logit_outputs)
    assert all(t is None for t in m._engine.tgraph.metric_logits)


@pytest.mark.parametrize("act,layer_act,loss", [("softmax", False, "categorical_crossentropy"),
                                                ("sigmoid", False, "mse"), ("softmax", True, "mse"),
                                                ("sigmoid", True, "binary_crossentropy")])
def test_as_tf_keras(act, layer_act, loss):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours = _logs(flexflow_keras, act, layer_act, loss)
    theirs = _logs(keras, act, layer_act, loss)
    assert ours.keys() == theirs.keys()
    for k in theirs:
        assert ours[k] == pytest.approx(theirs[k], rel=1e-4, abs=1e-5), k


def _focal_logs(lib, act: str):
    out = {}
    for j, loss in enumerate([lib.losses.BinaryFocalCrossentropy(),
                              lib.losses.BinaryFocalCrossentropy(apply_class_balancing=True, label_smoothing=0.1),
                              lib.losses.CategoricalFocalCrossentropy(),
                              lib.losses.BinaryFocalCrossentropy(from_logits=True)]):
        m = _model(lib, act, False)
        m.compile("sgd", loss, metrics=[loss, lib.losses.binary_focal_crossentropy])
        logs = m.evaluate(X, np.eye(3, dtype="float32")[LABELS], batch_size=32, verbose=0, return_dict=True)
        out.update({f"{j}:{k}": float(v) for k, v in logs.items()})
    return out


def test_focal_with_logits_crossentropy_of_the_probabilities():
    """BinaryFocalCrossentropy(from_logits=True) of a sigmoid output: Keras takes sigmoid(y_pred) and the
    crossentropy from y_pred (the probabilities) as logits; the sigmoid's own input plays no part."""
    m = _model(flexflow_keras, "sigmoid", False)
    m.compile("sgd", flexflow_keras.losses.BinaryFocalCrossentropy(from_logits=True))
    loss = m.evaluate(X, np.eye(3, dtype="float32")[LABELS], verbose=0)
    z = 1 / (1 + np.exp(-(X.astype(np.float64) @ KERNEL)))  # the output: what the loss takes as logits
    t = np.eye(3)[LABELS]
    p = 1 / (1 + np.exp(-z))
    bce = np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z)))
    p_t = t * p + (1 - t) * (1 - p)
    assert loss == pytest.approx(float(np.mean((1 - p_t) ** 2 * bce)), rel=1e-5)


@pytest.mark.parametrize("act", ["softmax", "sigmoid"])
def test_focal_as_tf_keras(act):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _focal_logs(flexflow_keras, act), _focal_logs(keras, act)
    assert ours.keys() == theirs.keys()
    for k in theirs:
        assert ours[k] == pytest.approx(theirs[k], rel=1e-4, abs=1e-5), k
