"""keras.models.clone_model (Sequential, functional with a shared layer and two outputs,
clone_function, call_function, input_tensors, recursive), Model.to_json / keras.models.model_from_json
and Model.get_config / from_config for functional models."""

import json

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.errors import DataError

L = keras.layers
X = np.random.default_rng(4).standard_normal((6, 4)).astype(np.float32)


@pytest.fixture(autouse=True, scope="module")
def _one_processor():
    keras.config.set(data_parallel_degree=1)  # no strategy search for these tiny models
    yield
    keras.config.reset()


def _sequential():
    return keras.Sequential([keras.Input((4,)), L.Dense(5, activation="relu"), L.Dense(2)], name="seq")


def _functional():
    inp = keras.Input((4,), name="x")
    shared = L.Dense(4, name="shared")
    h = shared(inp)
    h2 = shared(L.Dense(4, name="mid")(h))  # the same layer called twice
    return keras.Model(inp, [L.Dense(2, name="a")(h2), L.Dense(1, name="b")(h)], name="fun")


def _same_outputs(a, b):
    pa, pb = a.predict(X, verbose=0), b.predict(X, verbose=0)
    for u, v in zip(pa if isinstance(pa, list) else [pa], pb if isinstance(pb, list) else [pb], strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("make", [_sequential, _functional], ids=["sequential", "functional"])
def test_clone_has_new_layers_same_architecture(make):
    model = make()
    clone = keras.models.clone_model(model)
    assert type(clone) is type(model)
    assert [layer.name for layer in clone.layers] == [layer.name for layer in model.layers]
    assert all(c is not o for c, o in zip(clone.layers, model.layers, strict=True))
    assert clone.count_params() == model.count_params()
    clone.set_weights(model.get_weights())
    _same_outputs(clone, model)
    clone.compile("sgd", "mse")
    before = [w.copy() for w in model.get_weights()]
    ys = [np.zeros((6, 2)), np.zeros((6, 1))] if isinstance(model.output_shape, list) else np.zeros((6, 2))
    clone.fit(X, ys, epochs=1, verbose=0)
    for a, b in zip(model.get_weights(), before, strict=True):  # training the clone leaves the model alone
        np.testing.assert_array_equal(a, b)


def test_clone_function_call_function_and_input_tensors():
    model = _functional()
    seen, calls = [], []

    def clone_fn(layer):
        seen.append(layer.name)
        return layer if layer.name == "mid" else type(layer).from_config(layer.get_config())

    def call_fn(layer, *args, **kwargs):
        calls.append(layer.name)
        return layer(*args, **kwargs)

    new_input = keras.Input((4,), name="new_x")
    clone = keras.models.clone_model(model, input_tensors=new_input, clone_function=clone_fn, call_function=call_fn)
    assert seen == ["shared", "mid", "a", "b"]  # not the input layer
    assert calls.count("shared") == 2
    assert clone.inputs[0] is new_input
    assert clone.get_layer("mid") is model.get_layer("mid")  # returned as is: shared with the model
    with pytest.raises(DataError, match="2 tensors"):
        keras.models.clone_model(model, input_tensors=[new_input, keras.Input((4,))])


def test_recursive_clones_nested_models():
    inner = _sequential()
    outer = keras.Sequential([keras.Input((4,)), inner, L.Dense(1)])
    names = []
    clone = keras.models.clone_model(outer, clone_function=lambda layer: names.append(layer.name) or
                                     type(layer).from_config(layer.get_config()), recursive=True)
    assert "dense" in " ".join(names) and "seq" not in names  # the nested model's layers, not the model
    clone.set_weights(outer.get_weights())
    _same_outputs(clone, outer)


@pytest.mark.parametrize("make", [_sequential, _functional], ids=["sequential", "functional"])
def test_to_json_model_from_json_and_get_config(make):
    model = make()
    text = model.to_json()
    assert json.loads(text)["class_name"] == ("Sequential" if make is _sequential else "Functional")
    for again in (keras.models.model_from_json(text), type(model).from_config(model.get_config())):
        again.set_weights(model.get_weights())
        _same_outputs(again, model)
        assert again.get_config() == model.get_config()
    with pytest.raises(DataError, match="not JSON"):
        keras.models.model_from_json("{oops")
