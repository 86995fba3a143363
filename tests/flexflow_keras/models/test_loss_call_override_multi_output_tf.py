"""A multi-output model whose compiled Loss overrides ``__call__`` hands that output's sample weights to it,
as Keras 3's compiled loss calls each output's ``loss(y_true, y_pred, sample_weight)``: with sample weights
the doubled-MSE output evaluated 7.367 where tf.keras gives 8.384 (its unweighted value was weighted per
sample afterwards; one output only had been fixed)."""

import numpy as np
import pytest

import flexflow_keras as ff

rng = np.random.default_rng(0)
X = rng.normal(size=(16, 4)).astype("float32")
Y1, Y2 = rng.normal(size=(16, 1)).astype("float32"), rng.normal(size=(16, 2)).astype("float32")
SW = np.linspace(0, 2, 16).astype("float32")


def _run(lib, loss_kind):
    class Doubled(lib.losses.MeanSquaredError):
        def __call__(self, y_true, y_pred, sample_weight=None):
            return 2.0 * super().__call__(y_true, y_pred, sample_weight=sample_weight)

    inp = lib.Input((4,))
    model = lib.Model(inp, [lib.layers.Dense(1, name="a")(inp), lib.layers.Dense(2, name="b")(inp)])
    model.set_weights([np.linspace(-1, 1, w.size).reshape(w.shape).astype("float32") for w in model.get_weights()])
    model.compile(lib.optimizers.SGD(0.05), [Doubled(), "mse"] if loss_kind == "list" else Doubled())
    ev = lambda y, sw: model.evaluate(X, y, sample_weight=sw, batch_size=8, verbose=0)  # noqa: E731
    got = [ev([Y1, Y2], SW), ev([Y1, Y2], [SW, np.ones_like(SW)]), ev([Y1, Y2], [None, SW]), ev([Y1, Y2], None)]
    hist = model.fit(X, [Y1, Y2], sample_weight=SW, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    return got, hist, model.get_weights()


@pytest.mark.parametrize("loss_kind", ["list", "one"])
def test_call_override_per_output_weights_as_tf_keras(loss_kind):
    tf = pytest.importorskip("tensorflow")
    got, want = _run(ff, loss_kind), _run(tf.keras, loss_kind)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    assert sorted(got[1]) == sorted(want[1])
    for k in want[1]:
        np.testing.assert_allclose(got[1][k], want[1][k], rtol=1e-5)
    for g, w in zip(got[2], want[2], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
