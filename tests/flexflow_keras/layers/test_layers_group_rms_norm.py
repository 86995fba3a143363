"""GroupNormalization and RMSNormalization (layers/normalization_group.py): the layer harness (shapes,
weights, config round trip, graph vs eager, tf.keras parity), outputs and gradients against Keras 3 with the
same weights, masks, training with fit, and .keras files that tf.keras loads (and the other way)."""

import numpy as np
import pytest
from ff_layer_harness import make_data, run_layer_test

import flexflow_keras as ff
from flexflow_keras import layers, ops
from flexflow_keras.errors import ShapeError
from flexflow_keras.ops.tape import GradientTape

GROUP_CASES = [
    (dict(groups=4), (3, 5, 6, 8)),
    (dict(groups=2, axis=1), (3, 4, 5, 6)),  # channels_first
    (dict(groups=-1), (2, 7, 6)),  # instance normalisation
    (dict(groups=1, center=False), (2, 7, 6)),
    (dict(groups=3, epsilon=1e-5), (4, 6)),
    (dict(groups=2, axis=-2, scale=False), (2, 3, 4, 5)),
]


@pytest.mark.parametrize("kwargs,shape", GROUP_CASES)
def test_group_normalization_harness(kwargs, shape, parity):
    n = int(kwargs.get("center", True)) + int(kwargs.get("scale", True))
    layer, _, _ = run_layer_test(layers.GroupNormalization, kwargs, input_shape=shape,
                                 expected_output_shape=(None,) + shape[1:], expected_num_weights=n,
                                 expected_num_trainable=n, compare_tf=parity, tf_layer="GroupNormalization",
                                 randomize_weights=True, data=make_data(shape) * 3 + 1)
    channels = shape[kwargs.get("axis", -1)]
    names = ["gamma"] * kwargs.get("scale", True) + ["beta"] * kwargs.get("center", True)
    assert [w.name for w in layer.weights] == names
    assert all(tuple(w.shape) == (channels,) for w in layer.weights)


@pytest.mark.parametrize("kwargs,shape,wshape", [
    (dict(), (3, 7), (7,)),
    (dict(epsilon=1e-3), (3, 4, 6), (6,)),
    (dict(axis=[1, 2]), (3, 4, 6), (4, 6)),
    (dict(axis=-2), (3, 4, 4), (4,)),
])
def test_rms_normalization_harness(kwargs, shape, wshape, parity):
    layer, _, _ = run_layer_test(layers.RMSNormalization, kwargs, input_shape=shape,
                                 expected_output_shape=(None,) + shape[1:], expected_num_weights=1,
                                 expected_num_trainable=1, compare_tf=parity, tf_layer="RMSNormalization",
                                 randomize_weights=True)
    assert [w.name for w in layer.weights] == ["scale"] and tuple(layer.scale.shape) == wshape


def test_group_normalization_statistics():
    x = make_data((2, 3, 3, 4)) * 2 + 5
    y = np.asarray(layers.GroupNormalization(groups=2, epsilon=1e-3)(x))
    g = x.reshape(2, 3, 3, 2, 2)
    ref = (g - g.mean((1, 2, 4), keepdims=True)) / np.sqrt(g.var((1, 2, 4), keepdims=True) + 1e-3)
    np.testing.assert_allclose(y, ref.reshape(x.shape), rtol=1e-5, atol=1e-5)


def test_unknown_per_sample_dims():
    """No reshape splits the channels, so images or sequences of any size work (Keras' too)."""
    inp = layers.Input((None, None, 8))
    model = ff.Model(inp, layers.GroupNormalization(groups=4)(inp))
    for hw in ((3, 5), (6, 2)):
        x = make_data((2, *hw, 8))
        np.testing.assert_allclose(model(x), model.layers[-1](x), rtol=1e-6, atol=1e-6)


def test_masks():
    """GroupNormalization passes a mask on (Keras 3.15's call takes none: the statistics include the masked
    steps); RMSNormalization drops it, as Keras does."""
    inp = layers.Input((5,), dtype="int32")
    emb = layers.Embedding(10, 4, mask_zero=True)(inp)
    gn = layers.GroupNormalization(groups=2)(emb)
    rms = layers.RMSNormalization()(emb)
    assert getattr(gn, "_keras_mask", None) is not None
    assert getattr(rms, "_keras_mask", None) is None


def test_argument_errors():
    with pytest.raises(ValueError, match="groups"):
        layers.GroupNormalization(groups=0)
    with pytest.raises(ValueError, match="must divide the 6 channels"):
        layers.GroupNormalization(groups=4)(layers.Input((3, 6)))
    with pytest.raises(ValueError, match="cannot use the batch axis"):
        layers.GroupNormalization(groups=1, axis=0)(layers.Input((3, 6)))
    with pytest.raises(ShapeError, match="known size"):
        layers.GroupNormalization(groups=2)(layers.Input((3, None)))
    with pytest.raises(ValueError, match="axis"):
        layers.RMSNormalization(axis="last")
    with pytest.raises(ValueError, match="takes one tensor, received 2"):
        layers.GroupNormalization(groups=2)([layers.Input((4,)), layers.Input((4,))])


@pytest.mark.parametrize("cls,kwargs,shape", [
    ("GroupNormalization", dict(groups=4), (3, 5, 6, 8)),
    ("GroupNormalization", dict(groups=2, axis=1), (3, 4, 5, 6)),
    ("RMSNormalization", dict(), (3, 4, 8)),
    ("RMSNormalization", dict(axis=[1, 2]), (3, 4, 8)),
])
@pytest.mark.tf
def test_outputs_and_gradients_match_keras(cls, kwargs, shape):
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(shape) * 3 + 1).astype("float32")
    w = np.sin(np.arange(x.size)).reshape(shape).astype("float32")
    ours, theirs = getattr(layers, cls)(**kwargs), getattr(keras.layers, cls)(**kwargs)
    ours(x), theirs(x)
    weights = [rng.uniform(0.5, 1.5, np.shape(v)).astype("float32") for v in theirs.get_weights()]
    ours.set_weights(weights), theirs.set_weights(weights)
    np.testing.assert_allclose(ours(x), np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(theirs(xt) * w)
    want = tape.gradient(loss, [xt] + theirs.trainable_weights)
    inp = layers.Input(shape[1:])
    model = ff.Model(inp, ours(inp))  # the recorded graph, run under our tape
    xe = ops.convert_to_tensor(x)
    with GradientTape() as tape:
        tape.watch(xe)
        loss = ops.sum(ops.multiply(model(xe), w))
    got = tape.gradient(loss, [xe] + ours.trainable_weights)
    for g, t in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), t.numpy(), rtol=1e-4, atol=2e-5)


def _net(K, groups=4):
    inp = K.Input((6, 6, 3))
    h = K.layers.Conv2D(8, 3, padding="same")(inp)
    h = K.layers.GroupNormalization(groups=groups, gamma_regularizer=K.regularizers.l2(1e-3))(h)
    h = K.layers.Activation("relu")(h)
    h = K.layers.Reshape((36, 8))(h)
    h = K.layers.RMSNormalization(epsilon=1e-5)(h)
    return K.Model(inp, K.layers.Dense(2)(K.layers.GlobalAveragePooling1D()(h)))


def test_training_with_fit():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((128, 6, 6, 3)).astype("float32")
    y = (x[:, :3, :, 0].mean((1, 2)) > x[:, 3:, :, 1].mean((1, 2))).astype("int32")
    model = _net(ff)
    model.compile(optimizer=ff.optimizers.Adam(0.01),
                  loss=ff.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = [np.asarray(w).copy() for w in model.get_weights()]
    losses = model.fit(x, y, epochs=10, batch_size=32, verbose=0).history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < 0.8 * losses[0], losses
    gn = model.layers[2]
    assert not np.allclose(gn.get_weights()[0], before[2]) and len(model.losses) == 1  # gamma trained, l2 on it


@pytest.mark.tf
@pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning")
def test_keras_files_interchange_with_tf_keras(tmp_path):
    tf = pytest.importorskip("tensorflow")
    x = np.random.default_rng(6).standard_normal((3, 6, 6, 3)).astype("float32")
    ours = _net(ff)
    ours.set_weights([np.random.default_rng(i).uniform(0.5, 1.5, np.shape(w)).astype("float32")
                      for i, w in enumerate(ours.get_weights())])
    ours.save(tmp_path / "ours.keras")
    theirs = tf.keras.models.load_model(tmp_path / "ours.keras")
    assert [w.name for w in theirs.weights] == [w.name for w in ours.weights]
    np.testing.assert_allclose(np.asarray(theirs(x)), ours.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    again = ff.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(again.predict(x, verbose=0), ours.predict(x, verbose=0), rtol=1e-6, atol=1e-6)
    tf_model = _net(tf.keras)
    tf_model.save(tmp_path / "theirs.keras")
    back = ff.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(back.predict(x, verbose=0), np.asarray(tf_model(x)), rtol=1e-4, atol=1e-5)


def _fit_once(degree, weights, x, y):
    ff.config.set(only_data_parallel=True, cpus=degree, data_parallel_degree=degree)
    try:
        model = _net(ff)
        model.set_weights(weights)
        model.compile(optimizer=ff.optimizers.SGD(0.1), loss="mse")
        model.fit(x, y, epochs=1, batch_size=16, verbose=0, shuffle=False)
        return model
    finally:
        ff.config.reset()


def test_data_parallel_training_matches_one_shard():
    """Every op of the layers is per sample: two shards of the batch train to the single-shard weights."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((32, 6, 6, 3)).astype("float32")
    y = rng.standard_normal((32, 2)).astype("float32")
    weights = _net(ff).get_weights()
    two, one = _fit_once(2, weights, x, y), _fit_once(1, weights, x, y)
    assert "[2," in two._engine.strategy.describe()
    for a, b in zip(two.get_weights(), one.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert not np.allclose(two.get_weights()[2], weights[2])  # gamma moved
