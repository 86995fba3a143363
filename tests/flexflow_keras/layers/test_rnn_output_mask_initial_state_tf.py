"""A recurrent layer called with initial_state beside a masked input: Keras 3 passes no mask to the call
(two tensor arguments) but still puts the input's mask on a sequence output (RNN.compute_mask from the
first argument), so a sequence loss and accuracy skip the padded steps. Deep Learning with Python, 2nd
ed., ch. 11's GRU seq2seq decoder is `GRU(return_sequences=True)(x, initial_state=encoded_source)`; ours
dropped the mask there and averaged its loss over the padding too."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

RNG = np.random.default_rng(0)
IDS = RNG.integers(1, 9, (4, 6))
IDS[:, 4:] = 0
IDS[0, 2:] = 0
Y = RNG.integers(1, 9, (4, 6))
STATE = RNG.standard_normal((4, 5)).astype("float32")


def _rnn(K, kind, **kw):
    if kind == "RNN(GRUCell)":
        return K.layers.RNN(K.layers.GRUCell(5), **kw)
    if kind == "Bidirectional(GRU)":
        return K.layers.Bidirectional(K.layers.GRU(5, **kw), merge_mode="sum")
    return getattr(K.layers, kind)(5, **kw)


def _states(K, kind):
    n = 2 if kind == "LSTM" else 1
    if kind.startswith("Bidirectional"):
        n = 2
    return [K.Input((5,)) for _ in range(n)]


def _model(K, kind, return_state=False):
    inp = K.Input((None,), dtype="int64")
    h = K.layers.Embedding(10, 4, mask_zero=True)(inp)
    states = _states(K, kind)
    out = _rnn(K, kind, return_sequences=True, return_state=return_state)(h, initial_state=states)
    seq = out[0] if return_state else out
    return K.Model([inp] + states, K.layers.Dense(10, activation="softmax")(seq)), out


KINDS = ["GRU", "LSTM", "SimpleRNN", "RNN(GRUCell)", "Bidirectional(GRU)"]


@pytest.mark.parametrize("kind", KINDS)
def test_sequence_output_keeps_the_input_mask_with_initial_state(kind):
    for return_state in (False, True):
        _, theirs = _model(tk, kind, return_state)
        _, ours = _model(ff, kind, return_state)
        t_masks = [getattr(t, "_keras_mask", None) is not None for t in tk.tree.flatten(theirs)]
        f_masks = [getattr(t, "_keras_mask", None) is not None for t in ff.tree.flatten(ours)]
        assert f_masks == t_masks and t_masks[0]


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_masked_sequence_loss_and_accuracy_match_tf_keras(kind):
    tk.utils.set_random_seed(0)
    tm, _ = _model(tk, kind)
    fm, _ = _model(ff, kind)
    fm.set_weights(tm.get_weights())
    x = [IDS] + [STATE] * (len(tm.inputs) - 1)
    for m in (tm, fm):
        m.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    np.testing.assert_allclose(fm.evaluate(x, Y, verbose=0), tm.evaluate(x, Y, verbose=0), rtol=1e-5)
    th = tm.fit(x, Y, epochs=2, batch_size=2, shuffle=False, verbose=0).history
    fh = fm.fit(x, Y, epochs=2, batch_size=2, shuffle=False, verbose=0).history
    for k in ("loss", "accuracy"):
        np.testing.assert_allclose(fh[k], th[k], rtol=1e-5)
