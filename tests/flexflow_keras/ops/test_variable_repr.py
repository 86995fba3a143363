"""A Variable prints as Keras 3's does: path, shape, dtype and value (keras.io's Sequential guide prints
`layer.weights`)."""

import numpy as np

import flexflow_keras as keras


def test_variable_repr_matches_keras3_form():
    layer = keras.layers.Dense(3, kernel_initializer="ones", name="dense_repr")
    layer(np.ones((1, 2), "float32"))
    text = repr(layer.weights[0])
    assert text == f"<Variable path=dense_repr/kernel, shape=(2, 3), dtype=float32, value={np.ones((2, 3))}>"
    assert repr(layer.weights[1]).startswith("<Variable path=dense_repr/bias, shape=(3,), dtype=float32, value=[0.")


def test_variable_repr_without_a_readable_value():
    v = keras.Variable(np.zeros((2,), "float32"), name="v")

    def broken(_):
        raise RuntimeError("runtime gone")

    v._sync_hook = broken
    assert repr(v) == f"<Variable path={v.path}, shape=(2,), dtype=float32>"
