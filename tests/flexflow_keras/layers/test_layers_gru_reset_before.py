"""GRU(reset_after=False) (Keras 2's default GRU: one (3H,) bias, the reset gate applied before the
candidate's recurrent matmul): the layer harness, the cell in RNN, masks, and one training step against
tf.keras on copied weights."""

import numpy as np
import pytest
from ff_layer_harness import make_data, run_layer_test, tf_keras

from flexflow_keras import layers, models, optimizers
from kernels.rnn_reference import rnn_reference


@pytest.mark.parametrize("kw", [dict(), dict(return_sequences=True, go_backwards=True),
                                dict(return_sequences=True, activation="relu", use_bias=False)],
                         ids=["last", "backwards", "relu-nobias"])
def test_gru_reset_before_layer(kw, parity):
    units = 3
    out_shape = (None, 5, units) if kw.get("return_sequences") else (None, units)
    n_w = 2 if kw.get("use_bias") is False else 3
    layer, out, (x,) = run_layer_test(layers.GRU, dict(units=units, reset_after=False, **kw), input_shape=(3, 5, 4),
                                      expected_output_shape=out_shape, expected_num_weights=n_w,
                                      expected_num_trainable=n_w, compare_tf=parity, tf_layer="GRU")
    w = layer.get_weights()
    if n_w == 3:
        assert w[2].shape == (3 * units,)
    want, _, _ = rnn_reference("gru_reset_before", x, *w, activation=kw.get("activation", "tanh"),
                               go_backwards=kw.get("go_backwards", False),
                               return_sequences=kw.get("return_sequences", False))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert layers.GRU.from_config(layer.get_config()).reset_after is False


def test_gru_cell_reset_before_and_masks():
    x = make_data((3, 5, 4))
    mask = np.ones((3, 5), bool)
    mask[0, :2] = False
    mask[2, 3:] = False
    inp, m = layers.Input((5, 4)), layers.Input((5,), dtype="bool")
    rnn = layers.RNN(layers.GRUCell(3, reset_after=False), return_sequences=True, return_state=True)
    y, h = rnn(inp, mask=m)
    got = models.Model([inp, m], [y, h])([x, mask])
    assert rnn.cell.bias.shape == (9,)
    want_y, want_h, _ = rnn_reference("gru_reset_before", x, *rnn.cell.get_weights(), mask=mask,
                                      return_sequences=True)
    np.testing.assert_allclose(got[0], want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want_h, rtol=1e-5, atol=1e-6)


@pytest.mark.tf
def test_masked_training_step_matches_tf(request):
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    import flexflow_keras as ff

    rng = np.random.default_rng(0)
    ids = rng.integers(1, 20, (8, 6)).astype("int32")
    ids[:3, :2] = 0
    ids[5, 4:] = 0
    y = rng.integers(0, 2, (8, 1)).astype("float32")

    def build(lib):
        return lib.Sequential([lib.layers.Input((6,), dtype="int32"), lib.layers.Embedding(20, 4, mask_zero=True),
                               lib.layers.GRU(3, reset_after=False, return_sequences=True, go_backwards=True),
                               lib.layers.GRU(3, reset_after=False), lib.layers.Dense(1, activation="sigmoid")])

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


def test_initial_state_return_state_and_dropout():
    x = make_data((3, 5, 4))
    h0 = make_data((3, 2), seed=3)
    inp, hi = layers.Input((5, 4)), layers.Input((2,))
    gru = layers.GRU(2, reset_after=False, return_state=True)
    y, h = gru(inp, initial_state=[hi])
    got = models.Model([inp, hi], [y, h])([x, h0])
    want_y, want_h, _ = rnn_reference("gru_reset_before", x, *gru.get_weights(), h0=h0)
    np.testing.assert_allclose(got[0], want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want_h, rtol=1e-5, atol=1e-6)
    drop = layers.GRU(3, reset_after=False, dropout=0.5, recurrent_dropout=0.5, seed=1)
    infer = drop(x)
    np.testing.assert_allclose(infer, rnn_reference("gru_reset_before", x, *drop.get_weights())[0], rtol=1e-5,
                               atol=1e-6)
    assert not np.allclose(drop(x, training=True), infer)


@pytest.mark.tf
def test_bidirectional_matches_tf():
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    import flexflow_keras as ff

    x = make_data((3, 5, 4))

    def build(lib):
        inp = lib.layers.Input((5, 4))
        return lib.Model(inp, lib.layers.Bidirectional(lib.layers.GRU(3, reset_after=False,
                                                                      return_sequences=True))(inp))

    ours, theirs = build(ff), build(k)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.predict(x, verbose=0), np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)
