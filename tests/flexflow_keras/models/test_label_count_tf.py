"""A model with two outputs given one label array stops with a clear error naming the outputs, the labels
received and how to pass them (one array per output), where Keras 3.15 stops with "y_true and y_pred have
different structures" (keras.io's semantic image clustering, reduced, was given one array): ours stopped on
Python's "zip() argument 2 is longer than argument 1"."""

import numpy as np
import pytest

import flexflow_keras as ff

X = np.zeros((8, 4), "float32")
Y = np.zeros((8, 3), "float32")


def _model(lib):
    a = lib.Input((4,))
    model = lib.Model(a, [lib.layers.Dense(3, name="o1")(a), lib.layers.Dense(2, name="o2")(a)])
    model.compile("sgd", loss=["mse", "mse"])
    return model


@pytest.mark.parametrize("call", ["fit", "evaluate", "dataset"])
def test_one_label_array_for_two_outputs_says_what_to_pass(call):
    model = _model(ff)
    with pytest.raises(ValueError) as err:
        if call == "fit":
            model.fit(X, Y, verbose=0)
        elif call == "evaluate":
            model.evaluate(X, Y, verbose=0)
        else:
            model.fit(((X[i:i + 4], Y[i:i + 4]) for i in (0, 4)), steps_per_epoch=2, verbose=0)
    text = str(err.value)
    assert "zip()" not in text
    assert "2 outputs ['o1', 'o2']" in text and "received 1 label array (shape (" in text
    assert "list of 2 arrays" in text


def test_tf_keras_refuses_it_too_and_both_take_a_list():
    tf = pytest.importorskip("tensorflow")
    with pytest.raises(ValueError, match="different structures"):
        _model(tf.keras).fit(X, Y, verbose=0)
    for lib in (ff, tf.keras):
        model = _model(lib)
        model.fit(X, [Y, np.zeros((8, 2), "float32")], verbose=0)
