"""The metrics compiled for an output that has no loss are computed and logged, as tf.keras 3.15 computes
the metrics of every output it has labels for (they were dropped: a model compiled with loss=["mse", None]
and metrics=[None, ["accuracy"]] logged only the loss). The output's zero stand-in loss is not logged."""

import numpy as np
import pytest

import flexflow_keras as ff

rng = np.random.default_rng(0)
X = rng.normal(size=(16, 4)).astype("float32")
Y1 = rng.normal(size=(16, 1)).astype("float32")
Y2 = rng.integers(0, 3, size=(16,))
SW = np.linspace(0.1, 2, 16).astype("float32")


def _run(lib, kind):
    inp = lib.Input((4,))
    a = lib.layers.Dense(1, name="a")(inp)
    b = lib.layers.Dense(3, activation="softmax", name="b")(inp)
    model = lib.Model(inp, [a, b])
    model.set_weights([np.linspace(-1, 1, w.size).reshape(w.shape).astype("float32") for w in model.get_weights()])
    if kind == "list":
        model.compile(lib.optimizers.SGD(0.1), loss=["mse", None], metrics=[None, ["accuracy", lib.metrics.SparseCategoricalCrossentropy(name="ce")]])
    else:
        model.compile(lib.optimizers.SGD(0.1), loss={"a": "mse", "b": None}, metrics={"a": ["mae"]},
                      weighted_metrics={"b": [lib.metrics.SparseCategoricalCrossentropy(name="ce")]})
    out = [model.evaluate(X, [Y1, Y2], verbose=0), model.evaluate(X, [Y1, Y2], sample_weight=SW, verbose=0,
                                                                    return_dict=True)]
    out.append(model.fit(X, [Y1, Y2], sample_weight=SW, batch_size=8, epochs=2, shuffle=False, verbose=0).history)
    out.append(model.test_on_batch(X, [Y1, Y2], return_dict=True))
    return out, model.get_weights()


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_metrics_of_an_output_without_loss_as_tf_keras(kind):
    tf = pytest.importorskip("tensorflow")
    (got, got_w), (want, want_w) = _run(ff, kind), _run(tf.keras, kind)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for g, w in zip(got[1:], want[1:], strict=True):
        assert sorted(g) == sorted(w)
        for k in w:
            np.testing.assert_allclose(g[k], w[k], rtol=1e-5, err_msg=k)
    for g, w in zip(got_w, want_w, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _labels_for_losses_only(lib):
    inp = lib.Input((4,))
    model = lib.Model(inp, [lib.layers.Dense(1, name="a")(inp), lib.layers.Dense(3, activation="softmax", name="b")(inp)])
    model.set_weights([np.linspace(-1, 1, w.size).reshape(w.shape).astype("float32") for w in model.get_weights()])
    model.compile("sgd", loss=["mse", None], metrics=[None, ["accuracy"]])
    return [model.evaluate(X, y, verbose=0, return_dict=True) for y in ([Y1], Y1, [Y1, None], [Y1, Y2])]


def test_an_output_given_no_labels_has_no_metrics_as_tf_keras():
    tf = pytest.importorskip("tensorflow")
    got, want = _labels_for_losses_only(ff), _labels_for_losses_only(tf.keras)
    for g, w in zip(got, want, strict=True):
        assert sorted(g) == sorted(w)
        for k in w:
            np.testing.assert_allclose(g[k], w[k], rtol=1e-5, err_msg=k)
