"""Lists given per output to a model whose outputs are a dict ({"zz": ..., "aa": ...}) follow the dict's
sorted keys, as Keras 3 flattens a dict: compile's loss, loss_weights and metrics lists, and evaluate's labels
(tf.keras refuses a list of sample weights for dict outputs; ours map one by sorted key too). Before, they
followed the dict's insertion order: loss=["mse", "mae"] trained zz on mse where tf.keras 3.15 trains aa on
it; loss_weights=[1, 3] gave a loss of 8.22 where it gives 13.59."""

import numpy as np
import pytest

import flexflow_keras as ff

rng = np.random.default_rng(0)
X = rng.normal(size=(16, 4)).astype("float32")
YZ, YA = rng.normal(size=(16, 1)).astype("float32"), rng.normal(size=(16, 2)).astype("float32")


def _run(lib):
    inp = lib.Input((4,))
    model = lib.Model(inp, {"zz": lib.layers.Dense(1, name="z")(inp), "aa": lib.layers.Dense(2, name="a")(inp)})
    model.set_weights([np.linspace(-1, 1, w.size).reshape(w.shape).astype("float32") for w in model.get_weights()])
    ev = lambda y, **kw: model.evaluate(X, y, verbose=0, return_dict=True, **kw)  # noqa: E731
    out = []
    model.compile("sgd", loss=["mse", "mae"], metrics=[["mae"], ["mse"]])
    out.append(ev({"zz": YZ, "aa": YA}))
    model.compile("sgd", loss={"zz": "mse", "aa": "mae"}, loss_weights=[1.0, 3.0])
    out.append(ev({"zz": YZ, "aa": YA}))
    out.append(ev([YA, YZ]))  # labels by sorted key
    out.append(model.fit(X, {"zz": YZ, "aa": YA}, batch_size=8, epochs=2, shuffle=False, verbose=0).history)
    return out, [w for name in "az" for w in model.get_layer(name).get_weights()]


def test_dict_outputs_take_lists_by_sorted_key_as_tf_keras():
    tf = pytest.importorskip("tensorflow")
    (got, got_w), (want, want_w) = _run(ff), _run(tf.keras)
    for g, w in zip(got, want, strict=True):
        assert sorted(g) == sorted(w)
        for k in w:
            np.testing.assert_allclose(g[k], w[k], rtol=1e-5, err_msg=k)
    for g, w in zip(got_w, want_w, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
