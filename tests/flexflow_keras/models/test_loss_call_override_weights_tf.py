"""A compiled Loss whose class overrides ``__call__`` is handed the sample weights (and class weights), as
Keras 3's compiled loss calls ``loss(y_true, y_pred, sample_weight)``, and its value is the batch's loss,
not weighted again: an override doubling ``super().__call__`` with sample weights evaluated 6.22 where
tf.keras gives 7.24 (the override's unweighted value was weighted per sample afterwards)."""

import numpy as np
import pytest

import flexflow_keras as ff

rng = np.random.default_rng(0)
X = rng.normal(size=(20, 4)).astype("float32")
Y = rng.normal(size=(20, 1)).astype("float32")
SW = np.linspace(0, 2, 20).astype("float32")


def _run(lib, subclassed, weights):
    class Doubled(lib.losses.MeanSquaredError):
        def __call__(self, y_true, y_pred, sample_weight=None):
            return 2.0 * super().__call__(y_true, y_pred, sample_weight=sample_weight)

    units = 2 if "class_weight" in weights else 1
    if subclassed:
        class Sub(lib.Model):
            def __init__(self):
                super().__init__()
                self.d = lib.layers.Dense(units)

            def call(self, x):
                return self.d(x)
        model = Sub()
        model(X[:1])
    else:
        inp = lib.Input((4,))
        model = lib.Model(inp, lib.layers.Dense(units)(inp))
    model.set_weights([np.linspace(-1, 1, w.size).reshape(w.shape).astype("float32") for w in model.get_weights()])
    model.compile(lib.optimizers.SGD(0.05), Doubled())
    y = np.eye(2, dtype="float32")[(Y[:, 0] > 0).astype(int)] if units == 2 else Y
    before = model.evaluate(X, y, sample_weight=SW, batch_size=8, verbose=0)
    history = model.fit(X, y, epochs=2, batch_size=8, shuffle=False, verbose=0, **weights).history["loss"]
    return before, history, model.evaluate(X, y, sample_weight=SW, batch_size=8, verbose=0), model.get_weights()


@pytest.mark.parametrize("weights", [{"sample_weight": SW}, {"class_weight": {0: 0.5, 1: 2.0}}])
@pytest.mark.parametrize("subclassed", [False, True])
def test_call_override_takes_the_weights_as_tf_keras(subclassed, weights):
    tf = pytest.importorskip("tensorflow")
    got, want = _run(ff, subclassed, weights), _run(tf.keras, subclassed, weights)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5)
    for g, w in zip(got[3], want[3], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
