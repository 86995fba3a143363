"""A subclassed model fed several inputs as a list or a dict gets them in call() as that list or dict, as in
Keras (they were packed into one array: a NumPy error, a wrong dict-key message, or a misleading slice
error when the arrays had one shape); it trains as the functional model of the same layers does. A
functional model built on a dict of inputs takes data keyed as that dict."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import layers

rng = np.random.default_rng(0)
A, B, Y = rng.random((32, 3)).astype("float32"), rng.random((32, 2)).astype("float32"), rng.random((32, 1))


class ListModel(keras.Model):
    def __init__(self):
        super().__init__()
        self.d = layers.Dense(1)

    def call(self, inputs):
        a, b = inputs
        return self.d(layers.concatenate([a, b]))


class DictModel(ListModel):
    def call(self, inputs):
        return self.d(layers.concatenate([inputs["a"], inputs["b"]]))


def _reference(kernel, bias):
    return np.concatenate([A, B], axis=1) @ kernel + bias


@pytest.mark.parametrize(("model_class", "data"), [(ListModel, lambda: [A, B]), (DictModel, lambda: {"a": A, "b": B}),
                                                   (DictModel, lambda: {"b": B, "a": A})])
def test_structured_inputs_reach_call_as_given(model_class, data):
    model = model_class()
    model.compile(optimizer="sgd", loss="mse")
    hist = model.fit(data(), Y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    assert np.isfinite(hist.history["loss"]).all()
    kernel, bias = model.d.get_weights()
    assert kernel.shape == (5, 1)
    np.testing.assert_allclose(model.predict(data(), verbose=0), _reference(kernel, bias), rtol=1e-5, atol=1e-6)


def test_a_list_of_same_shaped_arrays_is_two_inputs():
    model = ListModel()
    model.compile(optimizer="sgd", loss="mse")
    model.fit([A, A], Y, batch_size=8, epochs=1, verbose=0)
    assert model.d.get_weights()[0].shape == (6, 1)


def test_a_functional_model_built_on_a_dict_takes_data_by_its_keys():
    """keras.Model({"a": Input(name="first"), ...}, out): data comes keyed as the model's dict (Keras 3),
    not by the Input names; the names still work."""
    first, second = keras.Input((3,), name="first"), keras.Input((2,), name="second")
    dense = layers.Dense(1)
    model = keras.Model({"a": first, "b": second}, dense(layers.concatenate([first, second])))
    model.compile(optimizer="sgd", loss="mse")
    model.fit({"a": A, "b": B}, Y, batch_size=8, epochs=1, verbose=0)
    kernel, bias = dense.get_weights()
    np.testing.assert_allclose(model.predict({"a": A, "b": B}, verbose=0), _reference(kernel, bias), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(model.predict({"first": A, "second": B}, verbose=0), _reference(kernel, bias),
                               rtol=1e-5, atol=1e-6)


def test_a_one_key_dict_reaches_call_as_a_dict():
    class OneKey(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = layers.Dense(1)

        def call(self, inputs):
            return self.d(inputs["a"])

    model = OneKey()
    model.compile(optimizer="sgd", loss="mse")
    model.fit({"a": A}, Y, batch_size=8, epochs=1, verbose=0)
    kernel, bias = model.d.get_weights()
    np.testing.assert_allclose(model.predict({"a": A}, verbose=0), A @ kernel + bias, rtol=1e-5, atol=1e-6)
