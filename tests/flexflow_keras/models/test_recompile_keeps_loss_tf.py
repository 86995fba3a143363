"""A compile without a loss keeps the loss (and loss_weights) of an earlier compile, and one without metrics
keeps the earlier metrics, as Keras 3.15's Trainer.compile (it rebuilds CompileLoss only for a loss that is
not None). keras.io's layer-subclassing guide compiles ("adam", "mse"), fits, then compile(optimizer="adam")
and fits again: tf.keras still trains mse plus the add_loss term (0.3606), flexflow_keras trained the add_loss
term alone (0.0045)."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(3)
X = rng.normal(size=(16, 3)).astype("float32")
Y = rng.normal(size=(16, 2)).astype("float32")
W = [rng.normal(size=(3, 2)).astype("float32"), np.zeros(2, "float32")]


def _model(lib):
    class Reg(lib.layers.Layer):
        def call(self, inputs):
            self.add_loss(0.01 * lib.ops.mean(inputs))
            return inputs

    inp = lib.Input((3,))
    m = lib.Model(inp, Reg()(lib.layers.Dense(2, name="out")(inp)))
    m.set_weights(W)
    return m


def _run(lib):
    m = _model(lib)
    m.compile("sgd", loss="mse", metrics=["mae"])
    first = m.fit(X, Y, batch_size=8, shuffle=False, verbose=0).history
    m.compile(optimizer="sgd")
    second = m.fit(X, Y, batch_size=8, shuffle=False, verbose=0).history
    m.compile(optimizer="sgd", loss="mae")
    third = m.evaluate(X, Y, batch_size=8, verbose=0, return_dict=True)
    return first, second, third, m.loss


def test_a_compile_without_loss_or_metrics_keeps_the_earlier_ones_as_tf_keras():
    got, want = _run(ff), _run(keras_ref)
    for g, w in zip(got[:3], want[:3], strict=True):
        assert sorted(g) == sorted(w)
        for k in w:
            np.testing.assert_allclose(np.ravel(g[k]), np.ravel(w[k]), rtol=1e-5, atol=1e-6, err_msg=k)
    assert got[3] == want[3] == "mae"


def test_a_first_compile_without_loss_has_none():
    for lib in (ff, keras_ref):
        m = _model(lib)
        m.compile("sgd")
        assert m.loss is None
        assert float(m.evaluate(X, Y, verbose=0)) == pytest.approx(
            float(np.mean(X @ W[0]) * 0.01), rel=1e-5)
