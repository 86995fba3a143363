"""SimpleRNN, LSTM, GRU, Bidirectional, TimeDistributed, RepeatVector, Masking through the layer harness,
masks, initial and returned states, dropout, and one training step against tf.keras on copied weights."""

import numpy as np
import pytest
from ff_layer_harness import make_data, run_layer_test, tf_keras

from flexflow_keras import layers, models, optimizers
from kernels.rnn_reference import rnn_reference

RNNS = [("SimpleRNN", layers.SimpleRNN), ("LSTM", layers.LSTM), ("GRU", layers.GRU)]
SHAPE = (3, 5, 4)


@pytest.mark.parametrize("name,cls", RNNS, ids=[n for n, _ in RNNS])
@pytest.mark.parametrize("kw", [dict(), dict(return_sequences=True), dict(go_backwards=True, return_sequences=True),
                                dict(activation="relu", use_bias=False)], ids=["last", "seq", "backwards", "relu"])
def test_recurrent_layers(name, cls, kw, parity):
    units = 3
    out_shape = (None, 5, units) if kw.get("return_sequences") else (None, units)
    n_w = 2 if kw.get("use_bias") is False else 3
    run_layer_test(cls, dict(units=units, **kw), input_shape=SHAPE, expected_output_shape=out_shape,
                   expected_num_weights=n_w, expected_num_trainable=n_w, compare_tf=parity, tf_layer=name)


def test_keras3_defaults_weights_and_gate_order():
    lstm = layers.LSTM(4)
    lstm(np.zeros((1, 2, 3), "float32"))
    k, u, b = lstm.get_weights()
    assert k.shape == (3, 16) and u.shape == (4, 16) and b.shape == (16,)
    np.testing.assert_allclose(u @ u.T, np.eye(4), atol=1e-5)  # orthogonal rows
    np.testing.assert_array_equal(b, np.r_[np.zeros(4), np.ones(4), np.zeros(8)])  # unit_forget_bias
    gru = layers.GRU(4)
    gru(np.zeros((1, 2, 3), "float32"))
    assert gru.bias.shape == (2, 12) and gru.reset_after
    assert layers.LSTM(4, unit_forget_bias=False).get_config()["unit_forget_bias"] is False


def test_masked_sequences_match_reference():
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 9, (4, 6)).astype("int32")
    ids[0, :3] = 0
    ids[1, 4:] = 0
    ids[2, 2] = 0
    inp = layers.Input((6,), dtype="int32")
    emb = layers.Embedding(9, 3, mask_zero=True)
    seq = emb(inp)
    assert seq._keras_mask is not None
    lstm = layers.LSTM(2, return_sequences=True, return_state=True)
    y, h, c = lstm(layers.Dropout(0.3)(seq))  # Dropout passes the mask on
    assert y._keras_mask is seq._keras_mask
    model = models.Model(inp, [y, h, c])
    got = model(ids)
    x = emb.embeddings.numpy()[ids]
    want = rnn_reference("lstm", x, *lstm.get_weights(), mask=ids != 0, return_sequences=True)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.tf
@pytest.mark.parametrize("name", ["LSTM", "GRU", "SimpleRNN"])
def test_embedding_mask_zero_matches_tf(name):
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    rng = np.random.default_rng(1)
    ids = rng.integers(1, 9, (4, 6)).astype("int32")
    ids[0, :3] = 0
    ids[1, 4:] = 0
    ids[3, 1] = 0

    def build(lib):
        inp = lib.layers.Input((6,), dtype="int32")
        x = lib.layers.Embedding(9, 3, mask_zero=True)(inp)
        x = getattr(lib.layers, name)(4, return_sequences=True)(x)
        x = getattr(lib.layers, name)(3)(x)
        return lib.Model(inp, x)

    ours, theirs = build(__import__("flexflow_keras")), build(k)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.predict(ids, verbose=0), np.asarray(theirs(ids)), rtol=1e-5, atol=1e-5)


def test_masking_layer(parity):
    data = make_data((2, 4, 3))
    data[0, 1] = 0.0
    data[1, 3] = 0.0
    layer, out, _ = run_layer_test(layers.Masking, dict(mask_value=0.0), input_shape=(2, 4, 3), data=data,
                                   expected_output_shape=(None, 4, 3), compare_tf=parity, tf_layer="Masking")
    inp = layers.Input((4, 3))
    y = layers.Masking()(inp)
    assert y._keras_mask is not None and tuple(y._keras_mask.shape) == (None, 4)
    rnn = layers.SimpleRNN(2)
    model = models.Model(inp, rnn(y))
    want, _, _ = rnn_reference("simple_rnn", data, *rnn.get_weights(), mask=np.any(data != 0, axis=-1))
    np.testing.assert_allclose(model(data), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave"])
def test_bidirectional(merge_mode, parity):
    units = 3
    width = 2 * units if merge_mode == "concat" else units
    run_layer_test(layers.Bidirectional, dict(layer=layers.LSTM(units, return_sequences=True), merge_mode=merge_mode),
                   input_shape=SHAPE, expected_output_shape=(None, 5, width), expected_num_weights=6,
                   compare_tf=parity, tf_layer="Bidirectional",
                   tf_kwargs=dict(layer=tf_keras().layers.LSTM(units, return_sequences=True), merge_mode=merge_mode)
                   if parity else None)


def test_bidirectional_states_backward_layer_and_none_merge():
    x = make_data(SHAPE)
    bi = layers.Bidirectional(layers.GRU(2, return_state=True), merge_mode=None,
                              backward_layer=layers.GRU(2, return_state=True, go_backwards=True))
    fw, bw, h_f, h_b = bi(x)
    np.testing.assert_allclose(fw, h_f)
    np.testing.assert_allclose(bw, h_b)
    want_b, _, _ = rnn_reference("gru", x, *bi.backward_layer.get_weights(), go_backwards=True)
    np.testing.assert_allclose(bw, want_b, rtol=1e-5, atol=1e-6)
    again = layers.Bidirectional(layers.GRU(2), weights=bi.get_weights()[:3] + bi.get_weights()[3:])
    again(x)
    for a, b in zip(again.get_weights(), bi.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="opposite go_backwards"):
        layers.Bidirectional(layers.GRU(2), backward_layer=layers.GRU(2))
    with pytest.raises(ValueError, match="merge_mode"):
        layers.Bidirectional(layers.GRU(2), merge_mode="max")


def test_time_distributed_dense_and_step_fallback():
    x = make_data((2, 3, 4, 5))
    td = layers.TimeDistributed(layers.Dense(2))
    y = td(x)
    k, b = td.layer.get_weights()
    np.testing.assert_allclose(y, x @ k + b, rtol=1e-5, atol=1e-6)
    inp = layers.Input((3, 4, 5))
    td_rnn = layers.TimeDistributed(layers.SimpleRNN(2))
    out = td_rnn(inp)
    assert tuple(out.shape) == (None, 3, 2)
    got = models.Model(inp, out)(x)
    for t in range(3):
        want, _, _ = rnn_reference("simple_rnn", x[:, t], *td_rnn.layer.get_weights())
        np.testing.assert_allclose(got[:, t], want, rtol=1e-5, atol=1e-6)
    clone = layers.TimeDistributed.from_config(td.get_config())
    assert clone.get_config() == td.get_config()
    again = layers.TimeDistributed(layers.Dense(2), weights=[k, b])
    np.testing.assert_allclose(again(x), y, rtol=1e-6)


def test_repeat_vector(parity):
    run_layer_test(layers.RepeatVector, dict(n=3), input_shape=(2, 4), expected_output_shape=(None, 3, 4),
                   compare_tf=parity, tf_layer="RepeatVector")


def test_initial_state_and_return_state():
    x = make_data(SHAPE)
    rng = np.random.default_rng(3)
    h0, c0 = rng.standard_normal((3, 2)).astype("float32"), rng.standard_normal((3, 2)).astype("float32")
    inp, hi, ci = layers.Input((5, 4)), layers.Input((2,)), layers.Input((2,))
    lstm = layers.LSTM(2, return_state=True)
    y, h, c = lstm(inp, initial_state=[hi, ci])
    got = models.Model([inp, hi, ci], [y, h, c])([x, h0, c0])
    want = rnn_reference("lstm", x, *lstm.get_weights(), h0=h0, c0=c0)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="initial_state to be a list of 2"):
        lstm(x, initial_state=[h0])


def test_dropout_only_in_training():
    x = make_data(SHAPE)
    layer = layers.LSTM(3, dropout=0.5, recurrent_dropout=0.5, seed=1)
    infer = layer(x)
    plain = rnn_reference("lstm", x, *layer.get_weights())[0]
    np.testing.assert_allclose(infer, plain, rtol=1e-5, atol=1e-6)
    assert not np.allclose(layer(x, training=True), infer)


def test_argument_errors_name_the_layer():
    with pytest.raises(ValueError, match="LSTM 'l1': stateful=True needs a fixed batch size"):
        layers.LSTM(2, stateful=True, name="l1")(layers.Input((3, 2)))
    with pytest.raises(ValueError, match="activation=.* is not supported"):
        layers.SimpleRNN(2, activation=lambda t: t)
    with pytest.raises(ValueError, match="positive integer for units"):
        layers.LSTM(0)
    with pytest.raises(ValueError, match="dropout in \\[0, 1\\)"):
        layers.LSTM(2, dropout=1.0)


@pytest.mark.tf
def test_one_training_step_matches_tf(request):
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    import flexflow_keras as ff

    rng = np.random.default_rng(0)
    ids = rng.integers(1, 20, (8, 7)).astype("int32")
    ids[:3, :2] = 0
    y = rng.integers(0, 2, (8, 1)).astype("float32")

    def build(lib):
        return lib.Sequential([lib.layers.Input((7,), dtype="int32"), lib.layers.Embedding(20, 4, mask_zero=True),
                               lib.layers.Bidirectional(lib.layers.LSTM(3, return_sequences=True)),
                               lib.layers.GRU(3), lib.layers.Dense(1, activation="sigmoid")])

    ours, theirs = build(ff), build(k)
    theirs.set_weights(ours.get_weights())
    ff.config.set(only_data_parallel=True)  # one step: no strategy search
    request.addfinalizer(ff.config.reset)
    ours.compile(optimizer=optimizers.SGD(0.5), loss="binary_crossentropy")
    theirs.compile(optimizer=k.optimizers.SGD(0.5), loss="binary_crossentropy")
    l_ours = ours.fit(ids, y, batch_size=8, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    l_theirs = theirs.fit(ids, y, batch_size=8, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    assert l_ours == pytest.approx(l_theirs, rel=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_time_distributed_with_open_timesteps_says_how_to_fix_it():
    """The CNN-LSTM tutorials' input_shape=(None, n_steps, n_features): one clean error naming the fix."""
    from flexflow_keras.errors import ShapeError

    with pytest.raises(ShapeError, match=r"wraps Conv1D.*\(None, None, 2, 1\).*input_shape=\(4, 2, 1\)"):
        models.Sequential([layers.TimeDistributed(layers.Conv1D(8, 1), input_shape=(None, 2, 1)),
                           layers.TimeDistributed(layers.Flatten()), layers.LSTM(4)])
    with pytest.raises(ShapeError, match=r"wraps Conv2D.*input_shape=\(4, 28, 28, 1\) for 4 steps, not "
                                         r"\(None, 28, 28, 1\)"):
        models.Sequential([layers.TimeDistributed(layers.Conv2D(8, 3), input_shape=(None, 28, 28, 1))])
