"""MultiHeadAttention(attention_axes=...) on inputs of rank 4 and 5: outputs and scores against a NumPy
einsum reference and tf.keras on copied weights, attention masks in Keras' layouts, the recorded graph,
and one training step against tf.keras."""

import numpy as np
import pytest
from ff_layer_harness import make_data, tf_keras

from flexflow_keras import layers, models, optimizers

CASES = [((2, 3, 4, 5), (2, 3, 4, 5), (2,)), ((2, 3, 4, 5), (2, 6, 4, 5), (1,)),
         ((2, 2, 3, 2, 6), (2, 2, 3, 2, 6), (2, 3)), ((2, 2, 3, 2, 6), (2, 2, 3, 2, 6), (3, 1)),
         ((2, 3, 4, 5), (2, 3, 4, 5), (-2,))]


def _reference(layer, q_in, v_in, axes, mask=None):
    """Keras' einsum formulation in float64 (projections, scores over `axes`, joint softmax, combine)."""
    wq, bq, wk, bk, wv, bv, wo, bo = [np.asarray(w, np.float64) for w in layer.get_weights()]
    q = np.einsum("...d,dhk->...hk", q_in, wq) + bq
    k = np.einsum("...d,dhk->...hk", v_in, wk) + bk
    v = np.einsum("...d,dhk->...hk", v_in, wv) + bv
    rank = q.ndim
    axes = tuple(a if a >= 0 else rank - 1 + a for a in axes)
    batch = [a for a in range(rank - 1) if a not in axes]  # includes the heads
    letters = "abcdefghijklmnop"
    tgt = letters[:rank]
    src = "".join(c if i in batch or i == rank - 1 else letters[rank + i] for i, c in enumerate(tgt))
    prod = "".join([tgt[i] for i in batch] + [tgt[i] for i in axes] + [src[i] for i in axes])
    scores = np.einsum(f"{src},{tgt}->{prod}", k, q / np.sqrt(q.shape[-1]))
    n = len(axes)
    flat = scores.reshape(scores.shape[:-n] + (-1,))
    if mask is not None:
        m = np.broadcast_to(mask, scores.shape).reshape(flat.shape)
        flat = np.where(m, flat, -1e9)
    p = np.exp(flat - flat.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    if mask is not None:
        p = np.where(m, p, 0.0)
    p = p.reshape(scores.shape)
    ctx = np.einsum(f"{prod},{src}->{tgt}", p, v)
    return np.einsum("...hv,hvo->...o", ctx, wo) + bo, p


@pytest.mark.parametrize("qshape,vshape,axes", CASES, ids=lambda c: str(c).replace(" ", ""))
def test_attention_axes_match_reference_and_tf(qshape, vshape, axes, parity):
    q, v = make_data(qshape, seed=1), make_data(vshape, seed=2)
    ours = layers.MultiHeadAttention(2, 3, attention_axes=axes)
    out, scores = ours(q, v, return_attention_scores=True)
    want, want_p = _reference(ours, q, v, axes)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scores, want_p, rtol=1e-4, atol=1e-6)
    ins = [layers.Input(qshape[1:]), layers.Input(vshape[1:])]
    model = models.Model(ins, ours(*ins))  # the recorded graph computes what the eager call does
    np.testing.assert_allclose(model.predict([q, v], verbose=0), out, rtol=1e-5, atol=1e-5)
    assert layers.MultiHeadAttention.from_config(ours.get_config()).attention_axes == ours.attention_axes
    if parity:
        theirs = tf_keras().layers.MultiHeadAttention(2, 3, attention_axes=axes)
        theirs(q, v)
        theirs.set_weights(ours.get_weights())
        o2, s2 = theirs(q, v, return_attention_scores=True)
        np.testing.assert_allclose(out, np.asarray(o2), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(scores, np.asarray(s2), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mask_shape", [(2, 4, 4), (2, 3, 1, 4, 4), (1, 4, 4)], ids=["keras-short", "full", "bcast"])
def test_attention_mask_over_axes(mask_shape, parity):
    q = make_data((2, 3, 4, 5), seed=1)
    rng = np.random.default_rng(4)
    mask = rng.random(mask_shape) > 0.3
    mask[..., 0] = True  # every query attends somewhere
    ours = layers.MultiHeadAttention(2, 3, attention_axes=(2,))
    out, scores = ours(q, q, attention_mask=mask, return_attention_scores=True)
    m = mask
    while m.ndim < 5:  # Keras expands in front of the query's attention axes
        m = np.expand_dims(m, -3)
    want, want_p = _reference(ours, q, q, (2,), m)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scores, want_p, rtol=1e-4, atol=1e-6)
    if parity:
        theirs = tf_keras().layers.MultiHeadAttention(2, 3, attention_axes=(2,))
        theirs(q, q)
        theirs.set_weights(ours.get_weights())
        o2 = theirs(q, q, attention_mask=mask)
        np.testing.assert_allclose(out, np.asarray(o2), rtol=1e-5, atol=1e-5)


def test_attention_axes_errors_name_the_layer():
    q = make_data((2, 3, 4, 5))
    with pytest.raises(ValueError, match="MultiHeadAttention 'm1' expects attention_axes among"):
        layers.MultiHeadAttention(2, 3, attention_axes=(0,), name="m1")(q, q)
    with pytest.raises(ValueError, match="padding masks .* are not supported"):
        layers.MultiHeadAttention(2, 3, attention_axes=(2,))(q, q, use_causal_mask=True)
    with pytest.raises(ValueError, match="broadcastable to the scores' shape"):
        layers.MultiHeadAttention(2, 3, attention_axes=(2,))(q, q, attention_mask=np.ones((2, 3, 4), bool))


@pytest.mark.tf
def test_training_step_matches_tf(request):
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    import flexflow_keras as ff

    x = make_data((4, 3, 4, 5))
    y = make_data((4, 1), seed=7)

    def build(lib):
        inp = lib.layers.Input((3, 4, 5))
        h = lib.layers.MultiHeadAttention(2, 3, attention_axes=(1,))(inp, inp)
        return lib.Model(inp, lib.layers.Dense(1)(lib.layers.Flatten()(h)))

    ours, theirs = build(ff), build(k)
    theirs.set_weights(ours.get_weights())
    ff.config.set(only_data_parallel=True)  # one step: no strategy search
    request.addfinalizer(ff.config.reset)
    ours.compile(optimizer=optimizers.SGD(0.1), loss="mse")
    theirs.compile(optimizer=k.optimizers.SGD(0.1), loss="mse")
    l_ours = ours.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    l_theirs = theirs.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    assert l_ours == pytest.approx(l_theirs, rel=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
