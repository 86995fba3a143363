"""A layer called with its inputs as a keyword named after call()'s first parameter
(``layer(logits=x, targets=y)``, keras.io's endpoint-layer pattern), as Keras 3 binds a call: eager,
symbolic in a functional model, inside a subclassed model's call(); and the error when no inputs come."""

import numpy as np
import pytest

import flexflow_keras as keras


class Endpoint(keras.layers.Layer):
    def call(self, logits, targets=None, scale=1.0):
        out = keras.ops.sigmoid(logits) * scale
        if targets is not None:
            out = out + targets
        return out


def _expected(x, t, scale=1.0):
    return 1.0 / (1.0 + np.exp(-x)) * scale + t


X = np.linspace(-2, 2, 12, dtype=np.float32).reshape(6, 2)
T = np.full((6, 2), 0.5, np.float32)


def test_eager_call_with_first_parameter_as_keyword():
    out = Endpoint()(logits=X, targets=T, scale=2.0)
    np.testing.assert_allclose(np.asarray(out), _expected(X, T, 2.0), rtol=1e-6)


def test_functional_and_subclassed_keyword_calls():
    a, b = keras.Input((2,)), keras.Input((2,))
    model = keras.Model([a, b], Endpoint()(logits=a, targets=b))
    np.testing.assert_allclose(model.predict([X, T], verbose=0), _expected(X, T), rtol=1e-6)

    class Sub(keras.Model):
        def __init__(self):
            super().__init__()
            self.end = Endpoint()

        def call(self, inputs):
            return self.end(logits=inputs["x"], targets=inputs["t"])

    sub = Sub()
    np.testing.assert_allclose(sub.predict({"x": X, "t": T}, verbose=0), _expected(X, T), rtol=1e-6)


def test_inputs_keyword_still_accepted_and_missing_inputs_named():
    dense = keras.layers.Dense(3)
    assert tuple(dense(inputs=X).shape) == (6, 3)
    with pytest.raises(TypeError, match=r"called without inputs.*keyword 'logits'.*\['targets'\]"):
        Endpoint(name="ep")(targets=T)
