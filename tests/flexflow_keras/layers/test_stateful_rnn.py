"""Stateful recurrent layers (Keras 3): each sample slot's final state is kept for the next batch, in
fit, evaluate and predict; reset_states() zeroes it (mid-fit from a callback too); the batch size must be
declared and match; the states are not weights. Against tf.keras on copied weights, and under data
parallelism."""

import numpy as np
import pytest
from ff_layer_harness import tf_keras

import flexflow_keras as ff

B, T, F = 2, 3, 2
RNG = np.random.default_rng(0)
X = RNG.standard_normal((4 * B, T, F)).astype("float32")
Y = RNG.standard_normal((4 * B, 3)).astype("float32")


def _build(lib, cell="LSTM", declare="input"):
    if declare == "input":
        inp = lib.Input((T, F), batch_size=B)
        rnn = getattr(lib.layers, cell)(4, stateful=True)
        return lib.Model(inp, lib.layers.Dense(3)(rnn(inp))), rnn
    rnn = getattr(lib.layers, cell)(4, stateful=True, batch_input_shape=(B, T, F))
    return lib.Sequential([rnn, lib.layers.Dense(3)]), rnn


@pytest.fixture(autouse=True)
def _no_search(request):
    ff.config.set(only_data_parallel=True)
    request.addfinalizer(ff.config.reset)


@pytest.mark.parametrize("cell", ["LSTM", "GRU", "SimpleRNN"])
def test_state_carries_over_between_batches_and_resets(cell):
    model, rnn = _build(ff, cell)
    one = model.predict(X[:B], batch_size=B, verbose=0)
    two = model.predict(X[:B], batch_size=B, verbose=0)
    assert np.abs(one - two).max() > 1e-4  # the second call starts from the first's final state
    assert len(model.get_weights()) == len(model.weights) and all("state" not in w.path for w in model.weights)
    rnn.reset_states()
    np.testing.assert_array_equal(rnn.states[0].numpy(), 0.0)
    np.testing.assert_allclose(model.predict(X[:B], batch_size=B, verbose=0), one, rtol=1e-6)
    # a longer predict is the same as its batches one after the other
    rnn.reset_states()
    whole = model.predict(X, batch_size=B, verbose=0)
    rnn.reset_states()
    parts = np.concatenate([model.predict(X[i:i + B], batch_size=B, verbose=0) for i in range(0, len(X), B)])
    np.testing.assert_allclose(whole, parts, rtol=1e-6)


def test_keras2_model_reset_states_and_bidirectional():
    model = ff.Sequential([ff.layers.Bidirectional(ff.layers.LSTM(4, stateful=True), batch_input_shape=(B, T, F))])
    one = model.predict(X[:B], batch_size=B, verbose=0)
    assert np.abs(model.predict(X[:B], batch_size=B, verbose=0) - one).max() > 1e-4
    model.reset_states()  # Keras 2's spelling: every stateful layer of the model
    np.testing.assert_allclose(model.predict(X[:B], batch_size=B, verbose=0), one, rtol=1e-6)


def test_a_batch_that_does_not_match_is_named_and_an_undeclared_batch_is_refused():
    model, _ = _build(ff, declare="sequential")
    with pytest.raises(ValueError, match="stateful with batch size 2.*batch of 8"):
        model.predict(X, batch_size=8, verbose=0)
    inp = ff.Input((T, F))
    with pytest.raises(ValueError, match="needs a fixed batch size.*batch_size=B"):
        ff.layers.LSTM(4, stateful=True)(inp)


def test_reset_from_a_callback_takes_effect_mid_fit():
    model, rnn = _build(ff)
    model.compile("sgd", "mse")
    seen = []

    class Reset(ff.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(np.abs(rnn.states[0].numpy()).max())
            rnn.reset_states()

    model.fit(X, Y, batch_size=B, epochs=1, shuffle=False, verbose=0, callbacks=[Reset()])
    assert len(seen) == 4 and min(seen) > 0.0
    np.testing.assert_array_equal(rnn.states[0].numpy(), 0.0)


def test_data_parallel_pieces_keep_their_own_rows():
    ff.config.set(only_data_parallel=True, cpus=2, data_parallel_degree=2)
    model, rnn = _build(ff)
    model.predict(X, batch_size=B, verbose=0)
    assert "[2, 1]" in model._engine.strategy.describe()
    ff.config.set(only_data_parallel=True, cpus=1, data_parallel_degree=1)
    single, srnn = _build(ff)
    single.set_weights(model.get_weights())
    single.predict(X, batch_size=B, verbose=0)
    for a, b in zip(rnn.states, srnn.states, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.tf
@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_stateful_matches_tf(cell):
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    ours, rnn = _build(ff, cell)
    theirs, trnn = _build(k, cell)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.predict(X, batch_size=B, verbose=0), theirs.predict(X, batch_size=B, verbose=0),
                               rtol=1e-5, atol=1e-6)
    for m, opt in ((ours, ff.optimizers.SGD(0.1)), (theirs, k.optimizers.SGD(0.1))):
        m.compile(optimizer=opt, loss="mse")
    h_ours = ours.fit(X, Y, batch_size=B, epochs=2, shuffle=False, verbose=0).history["loss"]
    h_theirs = theirs.fit(X, Y, batch_size=B, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h_ours, h_theirs, rtol=1e-5)
    for a, b in zip(rnn.states, trnn.states, strict=True):
        np.testing.assert_allclose(a.numpy(), np.asarray(b), rtol=1e-4, atol=1e-5)
    rnn.reset_states()
    trnn.reset_states()
    np.testing.assert_allclose(ours.evaluate(X, Y, batch_size=B, verbose=0),
                               theirs.evaluate(X, Y, batch_size=B, verbose=0), rtol=1e-5)


def _stacked(lib):
    inp = lib.Input((T, F), batch_size=B)
    rnn = lib.layers.RNN([lib.layers.LSTMCell(4), lib.layers.GRUCell(3)], stateful=True)
    return lib.Model(inp, lib.layers.Dense(3)(rnn(inp))), rnn


def _flat(states):
    if isinstance(states, (list, tuple)):
        return [s for x in states for s in _flat(x)]
    return [states]


def test_rnn_of_stacked_cells_keeps_every_cells_states():
    model, rnn = _stacked(ff)
    assert [tuple(s.shape) for s in rnn.states] == [(B, 4), (B, 4), (B, 3)]
    one = model.predict(X[:B], batch_size=B, verbose=0)
    assert np.abs(model.predict(X[:B], batch_size=B, verbose=0) - one).max() > 1e-4
    assert all(np.abs(s.numpy()).max() > 0 for s in rnn.states)
    rnn.reset_states()
    np.testing.assert_allclose(model.predict(X[:B], batch_size=B, verbose=0), one, rtol=1e-6)
    rnn.reset_states()
    whole = model.predict(X, batch_size=B, verbose=0)
    rnn.reset_states()
    parts = np.concatenate([model.predict(X[i:i + B], batch_size=B, verbose=0) for i in range(0, len(X), B)])
    np.testing.assert_allclose(whole, parts, rtol=1e-6)


def test_rnn_of_one_cell_equals_the_layer():
    inp = ff.Input((T, F), batch_size=B)
    cell_model = ff.Model(inp, ff.layers.RNN(ff.layers.GRUCell(4), stateful=True)(inp))
    layer_model = ff.Model(inp, ff.layers.GRU(4, stateful=True)(inp))
    layer_model.set_weights(cell_model.get_weights())
    for _ in range(3):  # the same carried state, batch after batch
        np.testing.assert_allclose(cell_model.predict(X[:B], batch_size=B, verbose=0),
                                   layer_model.predict(X[:B], batch_size=B, verbose=0), rtol=1e-5, atol=1e-6)


@pytest.mark.tf
def test_rnn_of_stacked_cells_matches_tf():
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    ours, rnn = _stacked(ff)
    theirs, trnn = _stacked(k)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.predict(X, batch_size=B, verbose=0), theirs.predict(X, batch_size=B, verbose=0),
                               rtol=1e-5, atol=1e-6)
    for m, opt in ((ours, ff.optimizers.SGD(0.1)), (theirs, k.optimizers.SGD(0.1))):
        m.compile(optimizer=opt, loss="mse")
    h_ours = ours.fit(X, Y, batch_size=B, epochs=2, shuffle=False, verbose=0).history["loss"]
    h_theirs = theirs.fit(X, Y, batch_size=B, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h_ours, h_theirs, rtol=1e-5)
    for a, b in zip(rnn.states, _flat(trnn.states), strict=True):
        np.testing.assert_allclose(a.numpy(), np.asarray(b), rtol=1e-4, atol=1e-5)
