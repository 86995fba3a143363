"""Which partial loss structures of a two-output model compile and train as in tf.keras 3.15, and which are
refused: a loss dict naming some outputs of a list-output model is refused (it trained the named ones);
a shorter loss list leaves the outputs after it without a loss (it was refused); a loss_weights dict
without an output that has a loss is refused (1.0 was taken). A dict-output model takes a partial dict."""

import numpy as np
import pytest

import flexflow_keras as ff

rng = np.random.default_rng(0)
X = rng.normal(size=(8, 4)).astype("float32")
Y1, Y2 = rng.normal(size=(8, 1)).astype("float32"), rng.normal(size=(8, 1)).astype("float32")

CASES = [
    ("list", {"a": "mse"}, None),
    ("list", {"a": "mse", "b": None}, None),
    ("list", ["mse"], None),
    ("list", [None, "mae"], None),
    ("list", ["mse", "mse", "mse"], None),
    ("list", {"a": "mse", "b": "mae"}, {"a": 2.0}),
    ("list", {"a": "mse", "b": "mae"}, {"b": 2.0, "a": 0.5}),
    ("dict", {"a": "mse"}, None),
    ("dict", {"b": "mae", "a": "mse"}, {"a": 2.0}),
]


def _run(lib, kind, loss, loss_weights):
    inp = lib.Input((4,))
    a, b = lib.layers.Dense(1, name="a")(inp), lib.layers.Dense(1, name="b")(inp)
    model = lib.Model(inp, [a, b] if kind == "list" else {"a": a, "b": b})
    model.set_weights([np.linspace(-1, 1, w.size).reshape(w.shape).astype("float32") for w in model.get_weights()])
    model.compile("sgd", loss=loss, loss_weights=loss_weights)
    y = [Y1, Y2] if kind == "list" else {"a": Y1, "b": Y2}
    try:
        return model.evaluate(X, y, verbose=0, return_dict=True)
    except (ValueError, KeyError) as e:
        return type(e)


@pytest.mark.parametrize("case", CASES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CASES)])
def test_partial_loss_structures_as_tf_keras(case):
    tf = pytest.importorskip("tensorflow")
    got, want = _run(ff, *case), _run(tf.keras, *case)
    if isinstance(want, type):
        assert got is ValueError, got  # (Keras raises a KeyError for some; ours are ValueErrors)
    else:
        assert sorted(got) == sorted(want)
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-5)


def test_partial_loss_dict_error_says_how():
    inp = ff.Input((4,))
    model = ff.Model(inp, [ff.layers.Dense(1, name="a")(inp), ff.layers.Dense(1, name="b")(inp)])
    model.compile("sgd", loss={"a": "mse"})
    with pytest.raises(ValueError, match=r"without the outputs \['b'\].*'b': None"):
        model.evaluate(X, [Y1, Y2], verbose=0)
