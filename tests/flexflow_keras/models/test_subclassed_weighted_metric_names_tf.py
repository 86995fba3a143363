"""A subclassed model with several unnamed outputs (call() returning a tuple) names its weighted metrics as
tf.keras 3.15: Keras' CompileMetrics names every output's metrics first, then the weighted ones, and a
weighted metric whose name is taken becomes "weighted_<name>" ("weighted_mae", then "weighted_mae_1").
Ours compared a weighted metric with its own output's "<output>_<name>" names, which unnamed outputs do
not have, so weighted_metrics=[["mae"], ["mae"]] beside metrics=[["mae"], ["mae"]] logged mae_2 and mae_3,
and a weighted metric of an earlier output took the plain name of a later output's metric."""

import numpy as np
import pytest

tf_keras = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
RS = np.random.default_rng(0)
X = RS.random((16, 4)).astype("float32")
Y1 = RS.random((16, 1)).astype("float32")
Y2 = RS.random((16, 3)).astype("float32")
SW = [np.linspace(0.5, 2.0, 16).astype("float32"), np.linspace(2.0, 0.5, 16).astype("float32")]


def _model(lib):
    class TwoHeads(lib.Model):
        def __init__(self):
            super().__init__()
            self.a = lib.layers.Dense(1)
            self.b = lib.layers.Dense(3)

        def call(self, x):
            return self.a(x), self.b(x)

    return TwoHeads()


CASES = {
    "same-everywhere": ([["mae"], ["mae"]], [["mae"], ["mae"]]),
    "crossed": ([["mae"], ["mse"]], [["mse"], ["mae"]]),
    "weighted-before-plain": ([[], ["mae"]], [["mae"], []]),
    "weighted-only": (None, [["mae"], ["mae"]]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_weighted_metric_names_as_tf_keras(case):
    metrics, weighted = CASES[case]
    ref = _model(tf_keras)
    ref(X)
    weights = ref.get_weights()
    got = {}
    for lib, model in ((tf_keras, ref), (ff, _model(ff))):
        model(X)
        model.set_weights(weights)
        model.compile(optimizer=lib.optimizers.SGD(0.1), loss=["mse", "mse"], metrics=metrics,
                      weighted_metrics=weighted)
        history = model.fit(X, [Y1, Y2], sample_weight=SW, batch_size=8, epochs=1, shuffle=False,
                            verbose=0).history
        got[lib.__name__] = history
    ref_h, ff_h = got["keras"], got["flexflow_keras"]
    assert sorted(ff_h) == sorted(ref_h)
    for key in ref_h:
        np.testing.assert_allclose(ff_h[key], ref_h[key], rtol=1e-5, err_msg=key)
