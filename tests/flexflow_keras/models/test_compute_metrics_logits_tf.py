"""A compute_metrics override sees a softmax output carrying its logits, as Keras 3 hands it the output
tensor of a traced step (whose ``_keras_logits`` its crossentropies read: metrics/logits.py). The override
got the bare probabilities: a binary_crossentropy metric of a softmax output logged 2.03 where tf.keras
3.15 logs 2.88, through super().compute_metrics and through a crossentropy the override computes."""

import numpy as np
import pytest

import flexflow_keras
from flexflow_keras import config

RS = np.random.RandomState(0)
X = (RS.randn(13, 6) * 4).astype("float32")
Y = np.eye(4, dtype="float32")[RS.randint(0, 4, 13)]


def _run(lib, own: bool, degree: int = 1):
    if lib is flexflow_keras:
        config.reset()
        config.set(cpus=degree, data_parallel_degree=degree)
    layers = lib.layers

    class Model(lib.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.bce = lib.metrics.Mean(name="own_bce")

        def compute_metrics(self, x, y, y_pred, sample_weight=None):
            if not own:
                return super().compute_metrics(x, y, y_pred, sample_weight)
            self.bce.update_state(lib.losses.binary_crossentropy(y, y_pred))
            return {"own_bce": self.bce.result()}

    inp = lib.Input((6,))
    m = Model(inp, layers.Dense(4, activation="softmax")(layers.Dense(8, activation="tanh")(inp)))
    rs = np.random.RandomState(1)
    m.set_weights([rs.randn(*v.shape).astype("float32") * 2 for v in m.get_weights()])
    m.compile(lib.optimizers.SGD(0.01), "categorical_crossentropy",
              metrics=None if own else ["binary_crossentropy", "categorical_crossentropy"])
    hist = m.fit(X, Y, batch_size=4, epochs=2, verbose=0, shuffle=False).history
    return hist, m.evaluate(X, Y, batch_size=5, verbose=0, return_dict=True)


@pytest.mark.parametrize("own,degree", [(False, 1), (True, 1), (False, 2)])
def test_compute_metrics_override_reads_logits_as_tf_keras(own, degree):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _run(flexflow_keras, own, degree), _run(keras, own)
    key = "own_bce" if own else "binary_crossentropy"
    np.testing.assert_allclose(ours[0][key], theirs[0][key], rtol=1e-5)
    if not own:  # tf.keras logs only what an override returns (we log the loss too)
        np.testing.assert_allclose(ours[0]["loss"], theirs[0]["loss"], rtol=1e-5)
    np.testing.assert_allclose(ours[1][key], theirs[1][key], rtol=1e-5)
