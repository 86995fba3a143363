"""MC dropout as Keras 3 defines it, against tf.keras 3.15: a Dropout (or AlphaDropout, GaussianNoise) whose
call is given ``training=True`` applies its noise in inference too: in predict, evaluate and model calls, a
fresh mask each time. Hands-On ML's chapter 11 subclasses Dropout with ``call(inputs, training=None):
return super().call(inputs, training=True)`` and averages 100 predicts; ours recorded the op following the
execution's mode, so predict was the identity (every sample the same, no spread). Plain dropout layers stay
the identity at inference."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
X = np.ones((64, 50), "float32")


def _mc(lib, base, **kw):
    class MC(base):
        def call(self, inputs, training=None):
            return super().call(inputs, training=True)

    return MC(**kw)


def _properties(lib, model):
    a, b = model.predict(X, verbose=0), model.predict(X, verbose=0)
    return {"differs": not np.allclose(a, b), "call_differs": not np.allclose(model(X), model(X)),
            "zeros": round(float((a == 0).mean()), 1), "kept": sorted(set(np.round(a[a != 0], 4).tolist()))[:1]}


def test_dropout_whose_call_passes_training_true_drops_at_inference_as_tf_keras():
    got = []
    for lib in (ff, keras_ref):
        inp = lib.Input((50,))
        got.append(_properties(lib, lib.Model(inp, _mc(lib, lib.layers.Dropout, rate=0.5)(inp))))
    assert got[0] == got[1] == {"differs": True, "call_differs": True, "zeros": 0.5, "kept": [2.0]}


def test_training_true_given_in_a_subclassed_call_drops_at_inference_as_tf_keras():
    got = []
    for lib in (ff, keras_ref):
        net = _net(lib)
        net(X[:2])
        got.append(not np.allclose(net.predict(X, verbose=0), net.predict(X, verbose=0)))
    assert got == [True, True]


def _net(lib):
    class Net(lib.Model):
        def __init__(self):
            super().__init__()
            self.drop, self.dense = lib.layers.Dropout(0.5), lib.layers.Dense(3)

        def call(self, x):
            return self.dense(self.drop(x, training=True))

    return Net()


def test_a_functional_node_given_training_true_follows_predict_as_tf_keras():
    # Keras 3's fit/evaluate/predict pass their own `training` to every node that takes one
    got = []
    for lib in (ff, keras_ref):
        inp = lib.Input((50,))
        model = lib.Model(inp, lib.layers.Dropout(0.5)(inp, training=True))
        got.append(np.allclose(model.predict(X, verbose=0), X))
    assert got == [True, True]


def test_mc_dropout_model_from_a_trained_one_as_tf_keras():
    # the notebook's conversion: MCDropout(layer.rate) in place of each Dropout, weights copied
    got = []
    for lib in (ff, keras_ref):
        model = lib.Sequential([lib.Input((50,)), lib.layers.Dropout(0.3), lib.layers.Dense(4, activation="softmax")])
        model.compile("sgd", "sparse_categorical_crossentropy")
        ident = np.allclose(model.predict(X[:4], verbose=0), model.predict(X[:4], verbose=0))
        mc = lib.Sequential([_mc(lib, lib.layers.Dropout, rate=layer.rate)
                             if isinstance(layer, lib.layers.Dropout) else layer for layer in model.layers])
        mc.set_weights(model.get_weights())
        mc.compile("sgd", "sparse_categorical_crossentropy")
        e1, e2 = (mc.evaluate(X[:8], np.zeros(8), verbose=0) for _ in range(2))
        probas = np.stack([mc.predict(X[:4], verbose=0) for _ in range(3)])
        got.append((ident, e1 != e2, not np.allclose(probas[0], probas[1]),
                    bool(np.allclose(probas.sum(-1), 1, atol=1e-5))))
    assert got[0] == got[1] == (True, True, True, True)


@pytest.mark.parametrize("base,kw", [("AlphaDropout", {"rate": 0.2}), ("GaussianNoise", {"stddev": 0.5}),
                                     ("GaussianDropout", {"rate": 0.3})])
def test_noise_layers_given_training_true_apply_at_inference_as_tf_keras(base, kw):
    got = []
    for lib in (ff, keras_ref):
        plain = lib.Sequential([lib.Input((50,)), getattr(lib.layers, base)(**kw)])
        mc = lib.Sequential([lib.Input((50,)), _mc(lib, getattr(lib.layers, base), **kw)])
        got.append((np.allclose(plain.predict(X, verbose=0), X), _properties(lib, mc)["differs"]))
    assert got[0] == got[1] == (True, True)
