"""Attention and AdditiveAttention (Keras 3): outputs and scores against a NumPy reference and tf.keras on
copied weights (scale modes, a separate key, masks from Embedding(mask_zero=True), the causal mask), the
query's mask on the output, config round trips, and one masked training step against tf.keras."""

import numpy as np
import pytest
from ff_layer_harness import make_data, tf_keras

from flexflow_keras import layers, models, optimizers

CASES = [("Attention", dict()), ("Attention", dict(use_scale=True)),
         ("Attention", dict(score_mode="concat", use_scale=True)), ("Attention", dict(score_mode="concat")),
         ("AdditiveAttention", dict()), ("AdditiveAttention", dict(use_scale=False))]


def _reference(name, kw, weights, q, v, k, v_mask=None, q_mask=None, causal=False):
    q, v, k = (np.asarray(a, np.float64) for a in (q, v, k))
    w = list(weights)
    if name == "AdditiveAttention":
        scale = w.pop(0) if kw.get("use_scale", True) else 1.0
        scores = (scale * np.tanh(q[:, :, None] + k[:, None])).sum(-1)
    elif kw.get("score_mode", "dot") == "dot":
        scores = q @ k.transpose(0, 2, 1) * (w.pop(0) if kw.get("use_scale") else 1.0)
    else:
        scale = w.pop(0) if kw.get("use_scale") else 1.0
        scores = w.pop(0) * np.tanh(scale * (q[:, :, None] + k[:, None])).sum(-1)
    keep = np.ones(scores.shape, bool)
    if v_mask is not None:
        keep &= v_mask[:, None, :]
    if causal:
        keep &= np.tril(np.ones(scores.shape[1:], bool))[None]
    scores = np.where(keep, scores, scores - 1e9)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = p @ v
    if q_mask is not None:
        out = np.where(q_mask[..., None], out, 0.0)
    return out, p


def _randomize(layer, seed=3):
    rng = np.random.default_rng(seed)
    layer.set_weights([(rng.standard_normal(w.shape) * 0.5 + 1.0).astype("float32") for w in layer.get_weights()])


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{'-'.join(f'{a}={b}' for a, b in k.items()) or 'default'}"
                                                for n, k in CASES])
@pytest.mark.parametrize("with_key", [False, True], ids=["qv", "qvk"])
def test_attention_layers(name, kw, with_key, parity):
    q, v = make_data((2, 3, 4), seed=1), make_data((2, 5, 6 if with_key else 4), seed=2)
    k = make_data((2, 5, 4), seed=4) if with_key else v
    args = [q, v, k] if with_key else [q, v]
    ours = getattr(layers, name)(**kw)
    ours(args)
    _randomize(ours)
    out, scores = ours(args, return_attention_scores=True)
    want, want_p = _reference(name, kw, ours.get_weights(), q, v, k)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(scores, want_p, rtol=1e-5, atol=1e-6)
    causal = ours(args, use_causal_mask=True)
    np.testing.assert_allclose(causal, _reference(name, kw, ours.get_weights(), q, v, k, causal=True)[0], rtol=1e-5,
                               atol=1e-5)
    clone = getattr(layers, name).from_config(ours.get_config())
    assert clone.get_config() == ours.get_config()
    ins = [layers.Input(a.shape[1:]) for a in args]
    np.testing.assert_allclose(models.Model(ins, ours(ins)).predict(args, verbose=0), out, rtol=1e-5, atol=1e-5)
    if parity:
        theirs = getattr(tf_keras().layers, name)(**kw)
        theirs(args)
        theirs.set_weights(ours.get_weights())
        o2, s2 = theirs(args, return_attention_scores=True)
        np.testing.assert_allclose(out, np.asarray(o2), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(scores, np.asarray(s2), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(causal, np.asarray(theirs(args, use_causal_mask=True)), rtol=1e-5, atol=1e-5)
        assert sorted(ours.get_config()) == sorted(theirs.get_config())


def _masked_model(lib, name):
    qi, vi = lib.layers.Input((4,), dtype="int32"), lib.layers.Input((5,), dtype="int32")
    emb = lib.layers.Embedding(10, 3, mask_zero=True)
    att = getattr(lib.layers, name)()([emb(qi), emb(vi)])
    return lib.Model([qi, vi], lib.layers.Dense(1)(lib.layers.GlobalAveragePooling1D()(att)))


QI = np.array([[1, 2, 0, 0], [3, 4, 5, 6], [7, 0, 0, 0]], "int32")
VI = np.array([[1, 0, 2, 0, 0], [3, 4, 5, 6, 7], [0, 8, 9, 0, 1]], "int32")


@pytest.mark.parametrize("name", ["Attention", "AdditiveAttention"])
def test_masks_from_embedding(name):
    qi, vi = layers.Input((4,), dtype="int32"), layers.Input((5,), dtype="int32")
    emb = layers.Embedding(10, 3, mask_zero=True)
    q, v = emb(qi), emb(vi)
    att = getattr(layers, name)()
    out = att([q, v])
    assert out._keras_mask is q._keras_mask  # the output keeps the query's mask
    got = models.Model([qi, vi], out).predict([QI, VI], verbose=0)
    table = emb.get_weights()[0]
    want, _ = _reference(name, {}, att.get_weights(), table[QI], table[VI], table[VI], v_mask=VI != 0, q_mask=QI != 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.tf
@pytest.mark.parametrize("name", ["Attention", "AdditiveAttention"])
def test_masked_training_step_matches_tf(name, request):
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    import flexflow_keras as ff

    y = make_data((3, 1), seed=5)
    ours, theirs = _masked_model(ff, name), _masked_model(k, name)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.predict([QI, VI], verbose=0), np.asarray(theirs([QI, VI])), rtol=1e-5, atol=1e-6)
    ff.config.set(only_data_parallel=True)  # one step: no strategy search
    request.addfinalizer(ff.config.reset)
    ours.compile(optimizer=optimizers.SGD(0.5), loss="mse")
    theirs.compile(optimizer=k.optimizers.SGD(0.5), loss="mse")
    l_ours = ours.fit([QI, VI], y, batch_size=3, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    l_theirs = theirs.fit([QI, VI], y, batch_size=3, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    assert l_ours == pytest.approx(l_theirs, rel=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_argument_errors_name_the_layer():
    with pytest.raises(ValueError, match="Attention 'a1' expects score_mode"):
        layers.Attention(score_mode="add", name="a1")
    with pytest.raises(ValueError, match="must be called on a list"):
        layers.Attention(name="a2")(make_data((2, 3, 4)))
    with pytest.raises(ValueError, match="expects query \\(batch, T, dim\\)"):
        layers.Attention(name="a3")([make_data((2, 3, 4)), make_data((2, 5, 4)), make_data((2, 4, 4))])
