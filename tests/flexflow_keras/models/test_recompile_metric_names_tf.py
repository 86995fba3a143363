"""A multi-output model's metric keeps its name through later compiles, as in tf.keras 3.15: a compile
without metrics keeps the earlier ones, and the same metric objects given again are named from their own
names. flexflow_keras prefixed the output name again at each new step graph: keras.io's built-in-methods
guide recompiles its two-output model and logged 'class_output_class_output_categorical_accuracy'.
(tf.keras' fit after a compile given the same objects again starts them from their previous state, since it
resets the metrics before its new CompileMetrics lists them: that one fit's metric values are not compared.)"""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(2)
X = rng.random((40, 6)).astype("float32")
Y1, Y2 = rng.random((40, 1)).astype("float32"), np.eye(3, dtype="float32")[rng.integers(0, 3, 40)]


def _run(lib):
    inp = lib.Input((6,), name="x")
    model = lib.Model(inp, [lib.layers.Dense(1, name="score")(inp), lib.layers.Dense(3, name="cls")(inp)])
    model.set_weights([np.random.default_rng(i).normal(size=w.shape).astype("float32") * 0.3
                       for i, w in enumerate(model.get_weights())])
    mae, acc = lib.metrics.MeanAbsoluteError(), lib.metrics.CategoricalAccuracy()
    losses = [lib.losses.MeanSquaredError(), lib.losses.CategoricalCrossentropy(from_logits=True)]
    out = []
    model.compile("sgd", loss=losses, metrics=[[mae], [acc]])
    out.append(model.fit(X, [Y1, Y2], batch_size=20, shuffle=False, verbose=0).history)
    model.compile("sgd", loss=losses)  # keeps the metrics
    out.append(model.fit(X, [Y1, Y2], batch_size=20, shuffle=False, verbose=0).history)
    model.compile("sgd", loss=losses, metrics=[[mae], [acc]])  # the same objects again
    out.append(model.fit(X, [Y1, Y2], batch_size=20, shuffle=False, verbose=0).history)
    out.append(model.evaluate(X, [Y1, Y2], batch_size=20, verbose=0, return_dict=True))
    return out


def test_metric_names_and_values_through_recompiles_as_tf_keras():
    got, want = _run(ff), _run(keras_ref)
    for n, (g, w) in enumerate(zip(got, want, strict=True)):
        assert sorted(g) == sorted(w)
        for k in w:
            if n == 2 and not k.endswith("loss"):
                continue
            np.testing.assert_allclose(np.ravel(g[k]), np.ravel(w[k]), rtol=1e-5, atol=1e-6, err_msg=k)
