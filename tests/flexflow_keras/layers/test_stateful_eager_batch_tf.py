"""A stateful recurrent layer called eagerly on arrays keeps states for the batch of its first call, as Keras
3 builds it on that shape (no declared batch size needed). keras.io's RNN guide calls
``layers.LSTM(64, stateful=True)`` on three (20, 10, 50) paragraphs and stopped with "stateful=True needs a
fixed batch size"; a symbolic input without a declared batch keeps that error. Against tf.keras 3.15."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(11)
PARAS = [rng.random((4, 5, 6)).astype("float32") for _ in range(3)]


def _layer(lib, kind):
    if kind == "RNN(LSTMCell)":
        return lib.layers.RNN(lib.layers.LSTMCell(3), stateful=True)
    return getattr(lib.layers, kind)(3, stateful=True)


def _run(lib, kind):
    layer = _layer(lib, kind)
    layer(PARAS[0])
    layer.set_weights([np.random.default_rng(i).normal(size=w.shape).astype("float32") * 0.4
                       for i, w in enumerate(layer.get_weights())])
    layer.reset_states()
    outs = [np.asarray(layer(p)) for p in PARAS]
    states = [np.asarray(s) for s in layer.states]
    layer.reset_states()
    outs.append(np.asarray(layer(PARAS[0])))
    return outs, states


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "SimpleRNN", "RNN(LSTMCell)"])
def test_eager_stateful_calls_carry_states_as_tf_keras(kind):
    (got, got_states), (want, want_states) = _run(ff, kind), _run(keras_ref, kind)
    for g, w in zip(got + got_states, want + want_states, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[3], got[0], rtol=1e-6)  # reset_states starts over


def test_a_symbolic_input_without_a_batch_size_is_still_refused():
    with pytest.raises(ValueError, match="stateful=True needs a fixed batch size"):
        ff.layers.LSTM(3, stateful=True)(ff.Input((5, 6)))
