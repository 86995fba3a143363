"""GroupedQueryAttention (keras.layers.GroupQueryAttention): shapes, masks, the recorded graph against the
eager call, training, config round trip, and Keras 3 parity on copied weights."""

import numpy as np
import pytest
from ff_layer_harness import make_data, tf_keras

import flexflow_keras as ff
from flexflow_keras import layers, models

CASES = [dict(head_dim=3, num_query_heads=4, num_key_value_heads=2),
         dict(head_dim=2, num_query_heads=3, num_key_value_heads=1, use_bias=False),  # multi-query attention
         dict(head_dim=3, num_query_heads=2, num_key_value_heads=2, use_gate=True)]  # multi-head, gated


def _pair(kwargs, *args):
    ours = layers.GroupQueryAttention(**kwargs)
    ours(*args)
    rng = np.random.default_rng(1)
    ws = [(rng.standard_normal(w.shape) * 0.5).astype("float32") for w in ours.weights]
    ours.set_weights(ws)
    theirs, tk = None, tf_keras()
    if tk is not None:
        theirs = tk.layers.GroupQueryAttention(**kwargs)
        theirs(*args)
        assert [tuple(w.shape) for w in theirs.weights] == [w.shape for w in ours.weights]
        theirs.set_weights(ws)
    return ours, theirs


@pytest.mark.parametrize("kwargs", CASES)
def test_outputs_scores_graph_and_config(kwargs):
    q, v, k = make_data((2, 5, 6), seed=1), make_data((2, 4, 6), seed=2), make_data((2, 4, 7), seed=3)
    ours, theirs = _pair(kwargs, q, v, k)
    out, scores = ours(q, v, k, return_attention_scores=True)
    assert out.shape == q.shape and scores.shape == (2, kwargs["num_query_heads"], 5, 4)
    np.testing.assert_allclose(scores.sum(-1), 1.0, rtol=1e-5)
    ins = [layers.Input(a.shape[1:]) for a in (q, v, k)]
    model = models.Model(ins, ours(*ins))
    np.testing.assert_allclose(model.predict([q, v, k], verbose=0), out, rtol=1e-5, atol=1e-5)
    clone = layers.GroupQueryAttention.from_config(ours.get_config())
    assert clone.get_config() == ours.get_config()
    if theirs is not None:
        o2, s2 = theirs(q, v, k, return_attention_scores=True)
        np.testing.assert_allclose(out, np.asarray(o2), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(scores, np.asarray(s2), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ours(q, v, k), np.asarray(theirs(q, v, k)), rtol=1e-5, atol=1e-5)


def test_masks_and_sliding_window():
    q = make_data((3, 6, 4), seed=1)
    rng = np.random.default_rng(2)
    mask = rng.integers(0, 2, (3, 6, 6)).astype("int32")
    mask[:, :, 0] = 1
    pad = np.ones((3, 6), "int32")
    pad[0, 4:] = 0
    for extra in ({}, {"sliding_window": 2}):
        kwargs = dict(head_dim=2, num_query_heads=4, num_key_value_heads=2, **extra)
        ours, theirs = _pair(kwargs, q, q)
        for kw in (dict(attention_mask=mask), dict(use_causal_mask=True), dict(value_mask=pad),
                   dict(attention_mask=mask, use_causal_mask=True)):
            out, scores = ours(q, q, return_attention_scores=True, **kw)
            if kw.get("use_causal_mask"):
                assert np.all(np.triu(scores, 1) == 0)
            if extra:
                assert np.all(np.tril(scores, -2) == 0) and np.all(np.triu(scores, 2) == 0)
            if theirs is not None:
                o2, s2 = theirs(q, q, return_attention_scores=True, **kw)
                np.testing.assert_allclose(out, np.asarray(o2), rtol=1e-5, atol=1e-5, err_msg=str((extra, list(kw))))
                np.testing.assert_allclose(scores, np.asarray(s2), rtol=1e-5, atol=1e-6)


def test_training_matches_keras3():
    tk = tf_keras()
    x = make_data((16, 5, 6), seed=4)
    y = make_data((16, 5, 6), seed=5)

    def build(lib):
        inp = lib.Input((5, 6))
        out = lib.layers.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2)(
            inp, inp, use_causal_mask=True)
        return lib.Model(inp, lib.layers.Dense(6)(out))

    ff.utils.set_random_seed(0)
    ours = build(ff)
    start = ours.get_weights()
    ours.compile(optimizer=ff.optimizers.SGD(0.05), loss="mse")
    ff.config.set(only_data_parallel=True)
    try:
        hist = ours.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0).history["loss"]
    finally:
        ff.config.reset()
    assert hist[-1] < hist[0]
    if tk is None:
        return
    theirs = build(tk)
    theirs.set_weights(start)
    theirs.compile(optimizer=tk.optimizers.SGD(0.05), loss="mse")
    want = theirs.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(hist, want, rtol=1e-4)


def test_heads_that_do_not_divide_are_named():
    with pytest.raises(ValueError, match="num_query_heads \\(3\\) must be divisible by num_key_value_heads \\(2\\)"):
        layers.GroupQueryAttention(head_dim=2, num_query_heads=3, num_key_value_heads=2)
