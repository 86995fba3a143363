"""The misc layers through the layer harness (with tf.keras parity on copied weights), the noise layers'
training statistics, Normalization.adapt against tf.keras, and the layers inside models trained by fit."""

import sys

import numpy as np
import pytest
from ff_layer_harness import make_data, run_layer_test, tf_keras

from flexflow_keras import config, layers, models


@pytest.fixture
def data_parallel(monkeypatch):
    """fit() data parallel over 2 CPU processors (each op split along the batch), without the strategy
    search: the search is not what these tests check, and it would dominate their time."""
    monkeypatch.setattr(sys, "argv", ["pytest"])
    config.reset()
    config.set(cpus=2, data_parallel_degree=2)
    yield
    config.reset()


# --- layers that are the identity in inference ------------------------------------------------------------
@pytest.mark.parametrize("name,kwargs,shape", [
    ("GaussianNoise", dict(stddev=0.3, seed=1), (4, 5)),
    ("GaussianDropout", dict(rate=0.3, seed=1), (4, 5)),
    ("AlphaDropout", dict(rate=0.2, seed=1), (4, 5)),
    ("SpatialDropout1D", dict(rate=0.3, seed=1), (4, 3, 5)),
    ("SpatialDropout2D", dict(rate=0.3, seed=1), (2, 3, 3, 4)),
    ("ActivityRegularization", dict(l1=0.01, l2=0.02), (4, 5)),
    ("Identity", dict(), (4, 5)),
])
def test_identity_in_inference(name, kwargs, shape, parity):
    _, out, data = run_layer_test(getattr(layers, name), kwargs, input_shape=shape,
                                  expected_output_shape=(None,) + shape[1:], compare_tf=parity, tf_layer=name)
    np.testing.assert_array_equal(out, data[0])


def test_noise_layers_in_training():
    x = make_data((200, 40))
    noise = layers.GaussianNoise(0.5, seed=3)(x, training=True) - x
    assert abs(noise.mean()) < 0.02 and abs(noise.std() - 0.5) < 0.02
    factor = layers.GaussianDropout(0.2, seed=3)(x, training=True) / x
    assert abs(factor.mean() - 1) < 0.02 and abs(factor.std() - 0.5) < 0.02  # sqrt(0.2 / 0.8)
    y = layers.AlphaDropout(0.1, seed=3)(x, training=True)
    assert abs(y.mean()) < 0.03 and abs(y.std() - 1) < 0.03  # SELU's fixed point is kept
    k = tf_keras()
    if k is not None:  # the same statistics as tf.keras' AlphaDropout
        theirs = np.asarray(k.layers.AlphaDropout(0.1, seed=3)(x, training=True))
        assert abs(theirs.mean() - y.mean()) < 0.05 and abs(theirs.std() - y.std()) < 0.05
    x3 = np.abs(make_data((8, 6, 10))) + 0.1
    y3 = layers.SpatialDropout1D(0.5, seed=2)(x3, training=True)
    dropped = (y3 == 0).all(axis=1)  # a channel is dropped at every step or at none
    np.testing.assert_allclose(y3, x3 * ~dropped[:, None, :] / 0.5, rtol=1e-6)
    assert 0.3 < dropped.mean() < 0.7
    x4 = np.abs(make_data((4, 3, 3, 6))) + 0.1
    y4 = layers.SpatialDropout2D(0.5, seed=2, data_format="channels_first")(x4, training=True)
    assert set(np.unique((y4 == 0).reshape(4, 3, -1).mean(-1))) <= {0.0, 1.0}


# --- layers with deterministic outputs ----------------------------------------------------------------
@pytest.mark.parametrize("kwargs,shape,n", [(dict(), (4, 5), 1), (dict(shared_axes=[1, 2]), (2, 3, 3, 4), 1)])
def test_prelu(kwargs, shape, n, parity):
    layer, out, data = run_layer_test(layers.PReLU, kwargs, input_shape=shape, expected_output_shape=(None,) + shape[1:],
                                      expected_num_weights=n, compare_tf=parity, tf_layer="PReLU",
                                      randomize_weights=True)
    alpha = layer.alpha.numpy()
    np.testing.assert_allclose(out, np.where(data[0] > 0, data[0], alpha * data[0]), rtol=1e-6)


@pytest.mark.parametrize("name,kwargs,shape", [
    ("Rescaling", dict(scale=1 / 255.0), (4, 5)),
    ("Rescaling", dict(scale=0.5, offset=-1.0), (2, 3, 4)),
    ("Rescaling", dict(scale=[0.5, 2.0, 1.0], offset=[0.0, 1.0, -2.0]), (2, 4, 3)),  # per channel
    ("Normalization", dict(mean=[1.0, 2.0, 3.0], variance=[1.0, 4.0, 0.25]), (4, 3)),
    ("Normalization", dict(axis=1, mean=[0.5, -0.5], variance=[2.0, 3.0]), (4, 2, 3)),
    ("Normalization", dict(mean=2.0, variance=9.0, invert=True), (4, 3)),
    ("UnitNormalization", dict(), (4, 5)),
    ("UnitNormalization", dict(axis=[1, 2]), (2, 3, 4)),
])
def test_deterministic_layers(name, kwargs, shape, parity):
    run_layer_test(getattr(layers, name), kwargs, input_shape=shape, expected_output_shape=(None,) + shape[1:],
                   compare_tf=parity, tf_layer=name)


@pytest.mark.parametrize("mode,shape,out", [("one_hot", (5, 1), (None, 10)), ("multi_hot", (5, 3), (None, 10)),
                                            ("count", (5, 4), (None, 10)), ("one_hot", (4, 3), (None, 3, 10))])
def test_category_encoding(mode, shape, out, parity):
    run_layer_test(layers.CategoryEncoding, dict(num_tokens=10, output_mode=mode), input_shape=shape,
                   input_dtype="int32", expected_output_shape=out, compare_tf=parity, tf_layer="CategoryEncoding")
    with pytest.raises(ValueError, match="outside \\[0, 10\\)"):
        layers.CategoryEncoding(num_tokens=10, output_mode=mode)(np.full(shape, 10))


@pytest.mark.parametrize("axes,shapes,out", [(1, [(4, 5), (4, 5)], (None, 1)), (2, [(3, 4, 5), (3, 2, 5)], (None, 4, 2)),
                                             ((1, 1), [(3, 4, 5), (3, 4, 2)], (None, 5, 2)),
                                             ((2, 1), [(3, 4, 5), (3, 5, 2)], (None, 4, 2))])
def test_dot(axes, shapes, out, parity):
    run_layer_test(layers.Dot, dict(axes=axes), input_shape=shapes, expected_output_shape=out, compare_tf=parity,
                   tf_layer="Dot")


def test_dot_function():
    a, b = layers.Input((3, 4)), layers.Input((5, 4))
    assert layers.dot([a, b], axes=2).shape == (None, 3, 5)


def test_dot_normalize_is_cosine(parity):
    _, out, (a, b) = run_layer_test(layers.Dot, dict(axes=1, normalize=True), input_shape=[(4, 6), (4, 6)],
                                    expected_output_shape=(None, 1), compare_tf=parity, tf_layer="Dot")
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(out[:, 0], cos, rtol=1e-5)


# --- Normalization.adapt ----------------------------------------------------------------------------------
@pytest.mark.parametrize("axis,shape", [(-1, (50, 4)), (None, (30, 3)), ((1, 2), (20, 3, 2)), (1, (20, 3, 2))])
def test_normalization_adapt_matches_tf(axis, shape):
    data = make_data(shape, seed=4) * 3 + 1
    layer = layers.Normalization(axis=axis)
    layer.adapt(data)
    mean, var, count = layer.get_weights()
    keep = {a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis or ())}
    reduce = tuple(d for d in range(len(shape)) if d not in keep)
    np.testing.assert_allclose(mean, data.mean(reduce), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, data.var(reduce), rtol=1e-5)
    # batches of an iterable give the same statistics (Chan's pairwise update)
    batched = layers.Normalization(axis=axis)
    batched.adapt(iter([data[:7], data[7:19], data[19:]]))
    for a, b in zip(batched.get_weights()[:2], (mean, var), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

    class Batches:  # a keras.utils.Sequence / PyDataset of (x, y) batches
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return data[i * 8:(i + 1) * 8], np.zeros(8)

    seq = layers.Normalization(axis=axis)
    seq.adapt(Batches(), steps=2)
    np.testing.assert_allclose(seq.get_weights()[0], data[:16].mean(reduce), rtol=1e-5, atol=1e-6)
    y = layer(data)
    np.testing.assert_allclose(y, (data - layer.mean) / np.sqrt(layer.variance), rtol=1e-4, atol=1e-5)
    k = tf_keras()
    if k is not None:
        import tensorflow as tf

        theirs = k.layers.Normalization(axis=axis)
        theirs.adapt(tf.data.Dataset.from_tensor_slices(data).batch(16))
        np.testing.assert_allclose(layer.mean, np.asarray(theirs.mean), rtol=1e-5, atol=1e-6)  # same shape too
        np.testing.assert_allclose(layer.variance, np.asarray(theirs.variance), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(y, np.asarray(theirs(data)), rtol=1e-4, atol=1e-5)
        ours_ds = layers.Normalization(axis=axis)
        ours_ds.adapt(tf.data.Dataset.from_tensor_slices(data).batch(16))
        np.testing.assert_allclose(ours_ds.get_weights()[0], mean, rtol=1e-5, atol=1e-6)


def test_normalization_adapt_after_build_and_errors(data_parallel):
    inp = layers.Input((3,))
    norm = layers.Normalization()
    model = models.Model(inp, norm(inp))
    data = make_data((40, 3)) * 2 + 5
    norm.adapt(data)  # adapted after the graph was recorded: the model reads the new statistics
    out = model.predict(data, verbose=0)
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-4)
    np.testing.assert_allclose(out.std(0), 1, atol=1e-3)
    with pytest.raises(ValueError, match="both mean and variance"):
        layers.Normalization(mean=1.0)
    with pytest.raises(ValueError, match="cannot change them"):
        layers.Normalization(mean=1.0, variance=1.0).adapt(data)
    with pytest.raises(ValueError, match="no data"):
        layers.Normalization().adapt(iter([]))


# --- argument checks ----------------------------------------------------------------------------------------
def test_argument_errors_name_the_layer():
    with pytest.raises(ValueError, match="GaussianNoise 'gn' expects stddev"):
        layers.GaussianNoise(-1, name="gn")
    with pytest.raises(ValueError, match="AlphaDropout 'ad' expects rate in \\[0, 1\\)"):
        layers.AlphaDropout(1.0, name="ad")
    with pytest.raises(ValueError, match="CategoryEncoding 'ce' expects output_mode"):
        layers.CategoryEncoding(3, output_mode="tf_idf", name="ce")
    with pytest.raises(ValueError, match="sparse=True is not supported"):
        layers.CategoryEncoding(3, sparse=True)
    with pytest.raises(ValueError, match="PReLU 'p' expects shared_axes"):
        layers.PReLU(shared_axes=[0], name="p")
    with pytest.raises(ValueError, match="Dot 'd' expects axes"):
        layers.Dot(axes="x", name="d")
    with pytest.raises(ValueError, match="expects attention_axes among the positional axes 1..2"):
        m = layers.MultiHeadAttention(2, 3, attention_axes=3, name="mha")
        m(layers.Input((4, 5, 6)), layers.Input((4, 5, 6)))


# --- MultiHeadAttention -------------------------------------------------------------------------------------
def _mha_pair(kwargs, q, v, k=None):
    """Ours and, when TensorFlow is installed, tf.keras' layer with the same (random) weights."""
    ours = layers.MultiHeadAttention(**kwargs)
    args = (q, v) if k is None else (q, v, k)
    ours(*args)
    rng = np.random.default_rng(1)
    ws = [(rng.standard_normal(w.shape) * 0.5).astype("float32") for w in ours.weights]
    ours.set_weights(ws)
    tk = tf_keras()
    theirs = None
    if tk is not None:
        theirs = tk.layers.MultiHeadAttention(**kwargs)
        theirs(*args)
        assert [tuple(w.shape) for w in theirs.weights] == [w.shape for w in ours.weights]
        theirs.set_weights(ws)
    return ours, theirs


@pytest.mark.parametrize("kwargs,qshape,vshape,kdim", [
    (dict(num_heads=2, key_dim=3), (3, 5, 6), (3, 4, 6), None),
    (dict(num_heads=3, key_dim=2, value_dim=4, output_shape=5, use_bias=False), (2, 4, 6), (2, 3, 7), 5),
    (dict(num_heads=2, key_dim=3), (2, 2, 3, 4), (2, 3, 2, 4), None),  # attention over two axes
])
def test_multi_head_attention_matches_tf(kwargs, qshape, vshape, kdim, parity):
    q, v = make_data(qshape, seed=1), make_data(vshape, seed=2)
    key = None if kdim is None else make_data(vshape[:-1] + (kdim,), seed=3)
    ours, theirs = _mha_pair(kwargs, q, v, key)
    assert len(ours.weights) == (4 if kwargs.get("use_bias") is False else 8)
    args = (q, v) if key is None else (q, v, key)
    out, scores = ours(*args, return_attention_scores=True)
    # the recorded graph (a functional model) computes what the eager call does
    ins = [layers.Input(a.shape[1:]) for a in args]
    model = models.Model(ins, ours(*ins))
    np.testing.assert_allclose(model.predict(list(args), verbose=0), out, rtol=1e-5, atol=1e-5)
    assert scores.shape == (qshape[0], kwargs["num_heads"]) + qshape[1:-1] + vshape[1:-1]
    per_query = scores.reshape(qshape[0], kwargs["num_heads"], int(np.prod(qshape[1:-1])), -1).sum(-1)
    np.testing.assert_allclose(per_query, 1.0, rtol=1e-5)
    clone = layers.MultiHeadAttention.from_config(ours.get_config())
    assert clone.get_config() == ours.get_config()
    if parity and theirs is not None:
        o2, s2 = theirs(*args, return_attention_scores=True)
        np.testing.assert_allclose(out, np.asarray(o2), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(scores, np.asarray(s2), rtol=1e-5, atol=1e-6)


def test_multi_head_attention_masks(parity):
    q = make_data((3, 5, 6), seed=1)
    ours, theirs = _mha_pair(dict(num_heads=2, key_dim=3), q, q)
    rng = np.random.default_rng(2)
    mask = rng.integers(0, 2, (3, 5, 5)).astype("int32")
    mask[:, :, 0] = 1
    pad = np.ones((3, 5), "int32")
    pad[0, 3:] = 0
    cases = [dict(attention_mask=mask), dict(use_causal_mask=True), dict(attention_mask=mask, use_causal_mask=True),
             dict(value_mask=pad)]
    for kw in cases:
        out, scores = ours(q, q, return_attention_scores=True, **kw)
        if "attention_mask" in kw:
            assert np.all(scores * (1 - mask[:, None]) == 0)
        if kw.get("use_causal_mask"):
            assert np.all(np.triu(scores, 1) == 0)
        if parity and theirs is not None:
            o2, s2 = theirs(q, q, return_attention_scores=True, **kw)
            np.testing.assert_allclose(out, np.asarray(o2), rtol=1e-5, atol=1e-5, err_msg=str(list(kw)))
            np.testing.assert_allclose(scores, np.asarray(s2), rtol=1e-5, atol=1e-6)
    # a symbolic mask input: the graph gives what the eager call gives
    x, m = layers.Input((5, 6)), layers.Input((5, 5), dtype="int32")
    model = models.Model([x, m], ours(x, x, attention_mask=m))
    np.testing.assert_allclose(model.predict([q, mask], verbose=0), ours(q, q, attention_mask=mask), rtol=1e-5,
                               atol=1e-5)
    # a padding mask carried by the tensor (`_keras_mask`, as Embedding(mask_zero=True) sets) masks the
    # queries and the values, and the output carries it on
    x, pm = layers.Input((5, 6)), layers.Input((5,), dtype="int32")
    x._keras_mask = pm
    y = ours(x, x)
    assert y._keras_mask is pm
    np.testing.assert_allclose(models.Model([x, pm], y).predict([q, pad], verbose=0),
                               ours(q, q, query_mask=pad, value_mask=pad), rtol=1e-5, atol=1e-5)


# --- inside models trained by fit -----------------------------------------------------------------------------
def test_misc_layers_train_in_a_model(data_parallel):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 6)).astype("float32") * 3 + 2
    y = (x[:, :1] > 2).astype("int32")
    norm = layers.Normalization()
    norm.adapt(x)
    inp = layers.Input((6,))
    h = layers.Rescaling(1.0)(norm(inp))
    h = layers.GaussianNoise(0.1, seed=1)(h)
    h = layers.PReLU(alpha_initializer="constant")(layers.Dense(16)(h))
    h = layers.AlphaDropout(0.1, seed=2)(h)
    h = layers.GaussianDropout(0.1, seed=3)(h)
    h = layers.ActivityRegularization(l2=1e-3)(h)
    h = layers.Reshape((4, 4))(h)
    h = layers.SpatialDropout1D(0.1, seed=4)(h)
    h = layers.UnitNormalization()(layers.Flatten()(h))
    out = layers.Dense(2, activation="softmax")(h)
    model = models.Model(inp, out)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    before = [w.copy() for w in model.get_weights()]
    hist = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    assert all(np.isfinite(v) for v in hist.history["loss"])
    changed = [not np.array_equal(a, b) for a, b in zip(before, model.get_weights(), strict=True)]
    prelu = [i for i, w in enumerate(model.weights) if w.name == "alpha"][0]
    assert changed[prelu] and sum(changed) >= 5  # PReLU's alpha and the Dense weights train
    assert np.array_equal(model.get_weights()[0], before[0])  # Normalization's statistics do not


def test_noise_layers_are_the_identity_in_predict_and_evaluate(data_parallel):
    x = make_data((16, 4, 6))
    model = models.Sequential([layers.Input((4, 6)), layers.GaussianNoise(1.0), layers.GaussianDropout(0.5),
                               layers.AlphaDropout(0.5), layers.SpatialDropout1D(0.5),
                               layers.ActivityRegularization(l1=1.0)])
    model.compile(optimizer="sgd", loss="mse")
    np.testing.assert_allclose(model.predict(x, verbose=0), x, rtol=1e-6)
    # the outputs equal the labels: the loss is ActivityRegularization's penalty alone, which Keras 3 reports
    assert model.evaluate(x, x, verbose=0) == pytest.approx(np.abs(x).sum() / len(x), rel=1e-5)


def test_transformer_block_fits_one_epoch(data_parallel):
    rng = np.random.default_rng(0)
    vocab, steps, dim = 20, 8, 16
    ids = rng.integers(0, vocab, (64, steps)).astype("int32")
    labels = (ids[:, 0] > vocab // 2).astype("int32")
    inp = layers.Input((steps,), dtype="int32")
    e = layers.Embedding(vocab, dim)(inp)
    a = layers.MultiHeadAttention(num_heads=2, key_dim=8, dropout=0.1, seed=1)(e, e)
    h = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([e, a]))
    f = layers.Dense(dim)(layers.Dense(32, activation="relu")(h))
    h = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([h, f]))
    out = layers.Dense(2, activation="softmax")(layers.GlobalAveragePooling1D()(h))
    model = models.Model(inp, out)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    mha = model.layers[2]
    before = [w.numpy().copy() for w in mha.weights]
    hist = model.fit(ids, labels, batch_size=16, epochs=1, verbose=0)
    assert np.isfinite(hist.history["loss"][0])
    assert all(not np.array_equal(b, w.numpy()) for b, w in zip(before, mha.weights, strict=True))
    assert model.predict(ids[:4], verbose=0).shape == (4, 2)


def test_normalization_statistics_answer_numpy_as_tensorflow_tutorials_ask():
    # the TensorFlow regression tutorial prints normalizer.mean.numpy()
    norm = layers.Normalization()
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    norm.adapt(data)
    np.testing.assert_allclose(norm.mean.numpy(), data.mean(axis=0, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(norm.variance.numpy(), data.var(axis=0, keepdims=True), rtol=1e-6)
    assert type(norm.mean.numpy()) is np.ndarray and norm.mean.shape == (1, 3)
