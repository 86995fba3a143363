"""The 3-D layers (Conv3D, Conv3DTranspose, Max/AveragePooling3D, GlobalAverage/MaxPooling3D, UpSampling3D, ZeroPadding3D,
Cropping3D) through the layer harness with tf.keras parity, channels_first against channels_last, errors,
training steps against tf.keras at data-parallel degrees 1 and 2, and .keras files both ways."""

import numpy as np
import pytest
from ff_layer_harness import run_layer_test

from flexflow_keras import layers
from flexflow_keras.errors import ShapeError

SHAPE = (2, 6, 7, 8, 3)


@pytest.mark.parametrize("kwargs,out_shape", [
    (dict(filters=4, kernel_size=3), (None, 4, 5, 6, 4)),
    (dict(filters=3, kernel_size=(2, 3, 2), strides=(2, 1, 3), padding="same", activation="relu"), (None, 3, 7, 3, 3)),
    (dict(filters=2, kernel_size=(3, 1, 2), dilation_rate=(2, 1, 1), activation="gelu"), (None, 2, 7, 7, 2)),
    (dict(filters=3, kernel_size=(2, 3, 3), dilation_rate=(1, 2, 3), padding="same", activation="relu"),
     (None, 6, 7, 8, 3)),
    (dict(filters=2, kernel_size=3, dilation_rate=(1, 3, 2)), (None, 4, 1, 4, 2)),
    (dict(filters=2, kernel_size=2, strides=2, use_bias=False, activation="softmax"), (None, 3, 3, 4, 2)),
])
def test_conv3d(kwargs, out_shape, parity):
    layer, _, _ = run_layer_test(layers.Conv3D, kwargs, input_shape=SHAPE, expected_output_shape=out_shape,
                                 expected_num_weights=1 + kwargs.get("use_bias", True), compare_tf=parity,
                                 tf_layer="Conv3D", randomize_weights=True, atol=3e-5)
    ks = kwargs["kernel_size"]
    assert tuple(layer.kernel.shape) == ((ks,) * 3 if isinstance(ks, int) else ks) + (3, kwargs["filters"])


@pytest.mark.parametrize("kwargs,out_shape", [
    (dict(filters=4, kernel_size=3), (None, 8, 9, 10, 4)),
    (dict(filters=3, kernel_size=(2, 3, 2), strides=(2, 1, 3), padding="same", activation="relu"), (None, 12, 7, 24, 3)),
    (dict(filters=2, kernel_size=3, strides=2, output_padding=(1, 0, 1), use_bias=False), (None, 14, 15, 18, 2)),
    (dict(filters=2, kernel_size=3, strides=(2, 2, 1), padding="same", output_padding=(0, 1, 0)), (None, 11, 14, 8, 2)),
])
def test_conv3d_transpose(kwargs, out_shape, parity):
    layer, _, _ = run_layer_test(layers.Conv3DTranspose, kwargs, input_shape=SHAPE, expected_output_shape=out_shape,
                                 expected_num_weights=1 + kwargs.get("use_bias", True), compare_tf=parity,
                                 tf_layer="Conv3DTranspose", randomize_weights=True, atol=5e-5)
    assert tuple(layer.kernel.shape)[3:] == (kwargs["filters"], 3)


@pytest.mark.parametrize("cls", ["MaxPooling3D", "AveragePooling3D"])
@pytest.mark.parametrize("kwargs,out_shape", [
    (dict(pool_size=2), (None, 3, 3, 4, 3)),
    (dict(pool_size=(3, 2, 3), strides=(2, 1, 2), padding="same"), (None, 3, 7, 4, 3)),
    (dict(pool_size=3, strides=1), (None, 4, 5, 6, 3)),
])
def test_pooling3d(cls, kwargs, out_shape, parity):
    data = np.round(np.random.default_rng(0).standard_normal(SHAPE) * 2).astype("float32") / 2  # ties
    run_layer_test(getattr(layers, cls), kwargs, input_shape=SHAPE, expected_output_shape=out_shape,
                   compare_tf=parity, tf_layer=cls, data=data)


@pytest.mark.parametrize("cls,kwargs,out_shape", [
    ("GlobalAveragePooling3D", dict(), (None, 3)),
    ("GlobalMaxPooling3D", dict(keepdims=True), (None, 1, 1, 1, 3)),
    ("UpSampling3D", dict(size=(2, 1, 3)), (None, 12, 7, 24, 3)),
    ("ZeroPadding3D", dict(padding=((1, 0), (2, 1), (0, 3))), (None, 7, 10, 11, 3)),
    ("ZeroPadding3D", dict(padding=1), (None, 8, 9, 10, 3)),
    ("Cropping3D", dict(cropping=((1, 2), (0, 3), (2, 2))), (None, 3, 4, 4, 3)),
])
def test_global_pooling_and_reshaping_3d(cls, kwargs, out_shape, parity):
    run_layer_test(getattr(layers, cls), kwargs, input_shape=SHAPE, expected_output_shape=out_shape,
                   compare_tf=parity, tf_layer=cls)


@pytest.mark.parametrize("cls,kwargs", [
    ("Conv3D", dict(filters=4, kernel_size=(2, 3, 2), strides=(1, 2, 1), padding="same")),
    ("Conv3DTranspose", dict(filters=2, kernel_size=2, strides=(2, 1, 2))),
    ("MaxPooling3D", dict(pool_size=2, padding="same")), ("AveragePooling3D", dict(pool_size=(1, 2, 3))),
    ("GlobalAveragePooling3D", dict()), ("UpSampling3D", dict(size=2)), ("ZeroPadding3D", dict(padding=(1, 2, 0))),
    ("Cropping3D", dict(cropping=(1, 0, 2))),
])
def test_channels_first_is_the_transposed_channels_last(cls, kwargs):
    x = np.random.default_rng(1).standard_normal(SHAPE).astype("float32")
    last = getattr(layers, cls)(**kwargs)
    first = getattr(layers, cls)(**kwargs, data_format="channels_first")
    want = last(x)
    first(np.moveaxis(x, -1, 1))
    first.set_weights(last.get_weights())
    got = first(np.moveaxis(x, -1, 1))
    np.testing.assert_allclose(got, np.moveaxis(want, -1, 1) if want.ndim == 5 else want, rtol=1e-6, atol=1e-6)


def test_aliases_and_errors():
    assert layers.Convolution3DTranspose is layers.Conv3DTranspose
    assert layers.Convolution3D is layers.Conv3D and layers.MaxPool3D is layers.MaxPooling3D
    assert layers.AvgPool3D is layers.AveragePooling3D and layers.GlobalAvgPool3D is layers.GlobalAveragePooling3D
    with pytest.raises(ValueError, match=r"strides=\(2, 2, 2\) above 1 cannot be combined with dilation_rate"):
        layers.Conv3D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ShapeError, match=r"larger than the input's depth 2 .* Use padding='same'"):
        layers.Conv3D(2, 3)(np.zeros((1, 2, 5, 5, 1), "float32"))
    with pytest.raises(ValueError, match=r"Reshape\(\(4, 5, 6, 1\)\)"):
        layers.MaxPooling3D()(np.zeros((2, 4, 5, 6), "float32"))
    with pytest.raises(ShapeError, match="leaves nothing of the input's height 7"):
        layers.Cropping3D(((0, 0), (4, 3), (0, 0)))(np.zeros(SHAPE, "float32"))


def _volume_model(k, seed=0):
    L = k.layers
    inp = k.Input(SHAPE[1:])
    h = L.Conv3D(4, 3, activation="relu", kernel_initializer=k.initializers.GlorotUniform(seed))(inp)
    h = L.MaxPooling3D(2, padding="same")(h)
    h = L.BatchNormalization()(h)
    h = L.Conv3D(5, (2, 2, 3), strides=(1, 2, 1), padding="same", activation="gelu",
                 kernel_initializer=k.initializers.GlorotUniform(seed + 1))(h)
    h = L.AveragePooling3D((1, 2, 2), padding="same")(h)
    h = L.UpSampling3D((2, 1, 1))(h)
    h = L.Conv3DTranspose(3, (2, 3, 2), strides=(1, 2, 1), padding="same", activation="tanh",
                          kernel_initializer=k.initializers.GlorotUniform(seed + 3))(h)
    h = L.ZeroPadding3D(((0, 1), (1, 0), (0, 0)))(h)
    h = L.Cropping3D(((1, 0), (0, 0), (0, 1)))(h)
    h = L.GlobalAveragePooling3D()(h)
    return k.Model(inp, L.Dense(3, activation="softmax", kernel_initializer=k.initializers.GlorotUniform(seed + 2))(h))


@pytest.mark.tf
@pytest.mark.parametrize("degree", [1, 2])
def test_training_steps_match_tf_keras(degree):
    """Three Adam steps of a 3-D CNN give tf.keras' losses and weights, at data-parallel degrees 1 and 2."""
    tf = pytest.importorskip("tensorflow")
    import flexflow_keras as keras
    from flexflow_keras import config

    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, *SHAPE[1:])).astype("float32")
    y = rng.integers(0, 3, 12)
    ours, theirs = _volume_model(keras), _volume_model(tf.keras)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    ours.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    theirs.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    config.set(only_data_parallel=True, cpus=2, data_parallel_degree=degree)
    try:
        got = ours.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0).history["loss"]
    finally:
        config.reset()
    want = theirs.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-4)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


@pytest.mark.tf
@pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning")
def test_keras_files_interchange_with_tf_keras(tmp_path):
    tf = pytest.importorskip("tensorflow")
    import flexflow_keras as keras

    x = np.random.default_rng(2).standard_normal((2, *SHAPE[1:])).astype("float32")
    ours = _volume_model(keras)
    ours.save(tmp_path / "ours.keras")
    theirs = tf.keras.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(np.asarray(theirs(x)), ours.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    tf_model = _volume_model(tf.keras)
    tf_model.save(tmp_path / "theirs.keras")
    back = keras.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(back.predict(x, verbose=0), np.asarray(tf_model(x)), rtol=1e-4, atol=1e-5)


@pytest.mark.tf
@pytest.mark.parametrize("padding", ["valid", "same"])
def test_max_pooling3d_gradient_goes_to_every_tied_maximum_as_tensorflow(padding):
    """TensorFlow's MaxPool3DGrad sends a window's gradient to each element equal to its maximum (its 2-D
    gradient picks one); windows of equal values are common (zeros, quantized images)."""
    tf = pytest.importorskip("tensorflow")
    from kernels import conv3d as C3

    x = np.round(np.random.default_rng(5).standard_normal((2, 4, 5, 5, 2))).astype("float32")
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.nn.max_pool3d(xt, (2, 3, 2), (2, 1, 2), padding.upper())
        dy = np.random.default_rng(6).standard_normal(y.shape).astype("float32")
        loss = tf.reduce_sum(y * dy)
    want = tape.gradient(loss, xt).numpy()
    out = np.empty(y.shape, np.float32)
    mid = np.empty((2, 4, *y.shape[2:4], 2), np.float32)
    C3.pool3d_forward_cpu(x, out, mid, (2, 3, 2), (2, 1, 2), padding, "max",
                          (np.empty(mid.shape, np.int32), np.empty(out.shape, np.int32)))
    np.testing.assert_array_equal(out, y.numpy())
    got = np.empty(x.shape, np.float32)
    C3.pool3d_backward_cpu(x, out, dy, got, mid, (2, 3, 2), (2, 1, 2), padding, "max")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
