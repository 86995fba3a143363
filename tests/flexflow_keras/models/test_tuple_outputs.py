"""A functional model built with a tuple of outputs gives a tuple back from call() and predict(), as
Keras 3 does (model.outputs stays a list); its config lists every output."""

import numpy as np

import flexflow_keras as keras


def _model():
    i = keras.Input((3,))
    return keras.Model(i, (keras.layers.Dense(2)(i), keras.layers.Dense(1)(i)))


def test_call_and_predict_give_a_tuple(tmp_path):
    m = _model()
    x = np.ones((4, 3), "float32")
    p = m.predict(x, verbose=0)
    assert isinstance(p, tuple) and [a.shape for a in p] == [(4, 2), (4, 1)]
    assert isinstance(m(x), tuple) and isinstance(m.outputs, list) and isinstance(m.output, tuple)
    assert len(m.get_config()["output_layers"]) == 2
    m.save(tmp_path / "m.keras")
    back = keras.models.load_model(tmp_path / "m.keras")
    got = back.predict(x, verbose=0)
    assert all(np.allclose(a, b) for a, b in zip(got, p, strict=True))
