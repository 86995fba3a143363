"""Masks through the layers Keras 3 makes mask-aware: GlobalAveragePooling1D averages over the unmasked
steps (GlobalMaxPooling1D ignores the mask, as Keras 3 does), Softmax with a mask, and the pass-through
layers (Dense, Dropout, activations, noise, normalizations) keeping the mask for the layers after them;
against a NumPy reference and against tf.keras on copied weights (predict and one training step)."""

import numpy as np
import pytest
from ff_layer_harness import make_data, tf_keras

from flexflow_keras import layers, models, optimizers

IDS = np.array([[1, 2, 0, 0, 0], [3, 0, 4, 5, 0], [6, 7, 8, 9, 1]], "int32")


def _masked_mean(x, mask, axis=1):
    m = np.expand_dims(mask.astype(x.dtype), -1 if axis == 1 else 1)
    return (x * m).sum(axis) / m.sum(axis)


def test_global_average_pooling_1d_excludes_masked_steps():
    inp = layers.Input((5,), dtype="int32")
    emb = layers.Embedding(10, 3, mask_zero=True)
    x = emb(inp)
    y = layers.GlobalAveragePooling1D()(x)
    k = layers.GlobalAveragePooling1D(keepdims=True)(x)
    assert getattr(y, "_keras_mask", None) is None  # the pooled output has no steps left to mask
    got, got_k = models.Model(inp, [y, k]).predict(IDS, verbose=0)
    want = _masked_mean(emb.get_weights()[0][IDS], IDS != 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_k, want[:, None], rtol=1e-5, atol=1e-6)


def test_global_average_pooling_1d_explicit_mask_and_channels_first():
    x = make_data((3, 4, 5))  # channels_first: (batch, features, steps)
    mask = IDS != 0
    got = layers.GlobalAveragePooling1D(data_format="channels_first")(x, mask=mask)
    np.testing.assert_allclose(got, _masked_mean(x, mask, axis=2), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="expects a mask of shape \\(batch, 5\\)"):
        layers.GlobalAveragePooling1D(name="gap")(make_data((3, 5, 4)), mask=np.ones((3, 4), bool))


def test_pass_through_layers_keep_the_mask():
    inp = layers.Input((5,), dtype="int32")
    x = layers.Embedding(10, 4, mask_zero=True)(inp)
    mask = x._keras_mask
    for layer in (layers.Dense(4), layers.Dropout(0.1), layers.ReLU(), layers.LeakyReLU(), layers.ELU(),
                  layers.PReLU(), layers.GaussianNoise(0.1), layers.GaussianDropout(0.1), layers.AlphaDropout(0.1),
                  layers.LayerNormalization(), layers.UnitNormalization(), layers.Rescaling(2.0),
                  layers.Activation("tanh"), layers.Identity()):
        x = layer(x)
        assert x._keras_mask is mask, type(layer).__name__


@pytest.mark.tf
@pytest.mark.parametrize("pool", ["GlobalAveragePooling1D", "GlobalMaxPooling1D"])
@pytest.mark.parametrize("source", ["embedding", "masking"])
def test_masked_pooling_matches_tf(pool, source, request):
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    import flexflow_keras as ff

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, (3, 1)).astype("float32")
    if source == "embedding":
        data = IDS
    else:
        data = make_data((3, 5, 4))
        data[IDS == 0] = 0.0

    def build(lib):
        if source == "embedding":
            inp = lib.layers.Input((5,), dtype="int32")
            x = lib.layers.Embedding(10, 4, mask_zero=True)(inp)
        else:
            inp = lib.layers.Input((5, 4))
            x = lib.layers.Masking(0.0)(inp)
        x = lib.layers.Dense(3, activation="relu")(x)
        x = lib.layers.Dropout(0.0)(x)  # passes the mask on (rate 0: the training step stays deterministic)
        x = getattr(lib.layers, pool)()(x)
        return lib.Model(inp, lib.layers.Dense(1, activation="sigmoid")(x))

    ours, theirs = build(ff), build(k)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.predict(data, verbose=0), np.asarray(theirs(data)), rtol=1e-5, atol=1e-6)
    ff.config.set(only_data_parallel=True)  # one step: no strategy search
    request.addfinalizer(ff.config.reset)
    ours.compile(optimizer=optimizers.SGD(0.5), loss="binary_crossentropy")
    theirs.compile(optimizer=k.optimizers.SGD(0.5), loss="binary_crossentropy")
    l_ours = ours.fit(data, y, batch_size=3, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    l_theirs = theirs.fit(data, y, batch_size=3, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    assert l_ours == pytest.approx(l_theirs, rel=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.tf
def test_softmax_with_mask_matches_tf():
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    x = make_data((3, 5))
    mask = IDS != 0
    mask[0] = False  # a fully masked row: zeros
    got = np.asarray(layers.Softmax()(x, mask=mask))
    np.testing.assert_allclose(got, np.asarray(k.layers.Softmax()(x, mask=mask)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[~mask], 0.0)
    with pytest.raises(ValueError, match="broadcastable"):
        layers.Softmax()(make_data((3, 5, 4)), mask=mask)


def test_lambda_mask_argument():
    inp = layers.Input((5,), dtype="int32")
    emb = layers.Embedding(10, 3, mask_zero=True)
    x = emb(inp)
    assert getattr(layers.Lambda(lambda t: t * 2.0)(x), "_keras_mask", None) is None  # Keras 3: no mask given
    keep = layers.Lambda(lambda t: t * 2.0, mask=lambda t, m: m)(x)
    assert keep._keras_mask is x._keras_mask
    seen = []
    layers.Lambda(lambda t, mask=None: seen.append(mask) or t)(x)  # a function taking `mask` receives it
    assert seen == [x._keras_mask]
    got = models.Model(inp, layers.GlobalAveragePooling1D()(keep)).predict(IDS, verbose=0)
    np.testing.assert_allclose(got, _masked_mean(2.0 * emb.get_weights()[0][IDS], IDS != 0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pool", ["GlobalAveragePooling1D", "GlobalMaxPooling1D"])
def test_global_pooling_1d_over_variable_length_sequences(pool):
    """Input(shape=(None,)) -> Embedding -> Conv1D -> global pooling (keras-io's text classification):
    the steps are unknown when the graph is built; fit and predict take any length."""
    inp = layers.Input((None,), dtype="int64")
    emb = layers.Embedding(20, 3)
    y = getattr(layers, pool)()(emb(inp))
    keep = getattr(layers, pool)(keepdims=True)(emb(inp))
    model = models.Model(inp, [y, keep])
    reduce = np.mean if pool.startswith("GlobalAverage") else np.max
    for length in (4, 7):
        ids = np.random.default_rng(length).integers(0, 20, (3, length))
        got, got_k = model.predict(ids, verbose=0)
        want = reduce(emb.get_weights()[0][ids], axis=1)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(got_k, want[:, None], rtol=1e-6, atol=1e-7)
    head = models.Model(inp, layers.Dense(1, activation="sigmoid")(y))
    head.compile(optimizer="adam", loss="binary_crossentropy")
    hist = head.fit(np.ones((8, 5), "int64"), np.ones(8), batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(hist.history["loss"][0])
