"""A subclassed model with several outputs (call() returning a tuple) logs its metrics and per-output losses
under Keras 3's names, as tf.keras 3.15 does: it has no output names, so each output's loss is
"<loss as given>_loss" ("mse_loss", or a Loss object's name) and its metrics keep their own names, made
unique across outputs ("mae", "mae_1"); evaluate's list is ordered as Keras orders it (loss, the metrics,
the per-output losses, then names it did not list). Ours named them "output_0_loss" / "output_0_mae", so
Deep Learning with Python (2nd ed.) ch. 7's CustomerTicketModel logged other keys and evaluate returned its
values in another order. A functional model keeps "<output>_loss" / "<output>_<metric>"."""

import numpy as np
import pytest

tf_keras = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
RS = np.random.default_rng(0)
X = RS.random((16, 4)).astype("float32")
Y1 = RS.random((16, 1)).astype("float32")
Y2 = np.eye(3, dtype="float32")[np.arange(16) % 3]


def _model(lib):
    class TwoHeads(lib.Model):
        def __init__(self):
            super().__init__()
            self.a = lib.layers.Dense(1)
            self.b = lib.layers.Dense(3, activation="softmax")

        def call(self, x):
            return self.a(x), self.b(x)

    return TwoHeads()


CASES = {
    "strings": lambda lib: (["mse", "categorical_crossentropy"], [["mae"], ["accuracy"]]),
    "loss-object-and-repeated-metric": lambda lib: ([lib.losses.MeanSquaredError(), "categorical_crossentropy"],
                                                    [["mae", "mse"], ["accuracy", "mae"]]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_names_and_evaluate_order_as_tf_keras(case):
    ref = _model(tf_keras)
    ref(X)
    weights = ref.get_weights()
    got = {}
    for lib, model in ((tf_keras, ref), (ff, _model(ff))):
        model(X)
        model.set_weights(weights)
        loss, metrics = CASES[case](lib)
        model.compile(optimizer=lib.optimizers.SGD(0.1), loss=loss, metrics=metrics)
        history = model.fit(X, [Y1, Y2], batch_size=8, epochs=1, shuffle=False, verbose=0).history
        got[lib.__name__] = (history, model.evaluate(X, [Y1, Y2], batch_size=8, verbose=0))
    (h_ref, e_ref), (h_ff, e_ff) = got["keras"], got["flexflow_keras"]
    assert sorted(h_ff) == sorted(h_ref)
    for key in h_ref:
        np.testing.assert_allclose(h_ff[key], h_ref[key], rtol=1e-5, err_msg=key)
    np.testing.assert_allclose(e_ff, e_ref, rtol=1e-5)


def test_functional_model_keeps_output_names():
    inputs = ff.Input((4,))
    outputs = [ff.layers.Dense(1, name="priority")(inputs),
               ff.layers.Dense(3, activation="softmax", name="department")(inputs)]
    model = ff.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss=["mse", "categorical_crossentropy"], metrics=[["mae"], ["accuracy"]])
    history = model.fit(X, [Y1, Y2], batch_size=8, epochs=1, verbose=0).history
    assert sorted(history) == ["department_accuracy", "department_loss", "loss", "priority_loss",
                               "priority_mae"]
