"""The convolution-family layers through the layer harness (shapes, config round trip, eager vs graph,
tf.keras parity on copied weights), their Keras 2 spellings and errors, and a tiny Conv2DTranspose +
UpSampling2D autoencoder that trains."""

import numpy as np
import pytest
from ff_layer_harness import run_layer_test

from flexflow_keras import layers, models
from flexflow_keras.errors import ShapeError


@pytest.mark.parametrize("kwargs,out_shape", [
    (dict(filters=4, kernel_size=3), (None, 7, 4)),
    (dict(filters=3, kernel_size=2, strides=2, padding="same", activation="relu"), (None, 5, 3)),
    (dict(filters=2, kernel_size=3, padding="causal", dilation_rate=2, activation="gelu"), (None, 9, 2)),
    (dict(filters=2, kernel_size=(3,), padding="causal", use_bias=False, activation="softmax"), (None, 9, 2)),
])
def test_conv1d(kwargs, out_shape, parity):
    run_layer_test(layers.Conv1D, kwargs, input_shape=(2, 9, 3), expected_output_shape=out_shape,
                   expected_num_weights=1 + kwargs.get("use_bias", True), compare_tf=parity, tf_layer="Conv1D",
                   randomize_weights=True, atol=2e-5)


def test_conv1d_channels_first(parity):
    run_layer_test(layers.Conv1D, dict(filters=4, kernel_size=3, data_format="channels_first"),
                   input_shape=(2, 3, 8), expected_output_shape=(None, 4, 6), expected_num_weights=2)


@pytest.mark.parametrize("kwargs,out_shape", [
    (dict(filters=3, kernel_size=3), (None, 7, 8, 3)),
    (dict(filters=3, kernel_size=3, strides=2, padding="same", activation="relu"), (None, 10, 12, 3)),
    (dict(filters=2, kernel_size=(3, 2), strides=(2, 3), padding="valid"), (None, 11, 18, 2)),
    (dict(filters=2, kernel_size=3, strides=2, padding="same", output_padding=(0, 1)), (None, 9, 12, 2)),
    (dict(filters=2, kernel_size=1, strides=3, use_bias=False), (None, 15, 18, 2)),
    (dict(filters=2, kernel_size=4, strides=2, padding="same"), (None, 10, 12, 2)),
    (dict(filters=2, kernel_size=(5, 4), strides=(2, 3), padding="same", output_padding=(1, 2)), (None, 10, 17, 2)),
])
def test_conv2d_transpose(kwargs, out_shape, parity):
    run_layer_test(layers.Conv2DTranspose, kwargs, input_shape=(2, 5, 6, 4), expected_output_shape=out_shape,
                   expected_num_weights=1 + kwargs.get("use_bias", True), compare_tf=parity,
                   tf_layer="Conv2DTranspose", randomize_weights=True, atol=3e-5)


@pytest.mark.parametrize("kwargs,out_shape", [
    (dict(filters=3, kernel_size=3), (None, 8, 3)),
    (dict(filters=2, kernel_size=3, strides=2, padding="same", activation="relu"), (None, 12, 2)),
    (dict(filters=2, kernel_size=4, strides=3, output_padding=1, use_bias=False), (None, 20, 2)),
])
def test_conv1d_transpose(kwargs, out_shape, parity):
    layer, _, _ = run_layer_test(layers.Conv1DTranspose, kwargs, input_shape=(2, 6, 4),
                                 expected_output_shape=out_shape,
                                 expected_num_weights=1 + kwargs.get("use_bias", True), compare_tf=parity,
                                 tf_layer="Conv1DTranspose", randomize_weights=True, atol=3e-5)
    assert layer.kernel.shape == (kwargs["kernel_size"], kwargs["filters"], 4)


def test_conv2d_transpose_channels_first_and_kernel_layout():
    layer, _, _ = run_layer_test(layers.Conv2DTranspose, dict(filters=3, kernel_size=2, strides=2,
                                                              data_format="channels_first"),
                                 input_shape=(2, 4, 3, 5), expected_output_shape=(None, 3, 6, 10),
                                 expected_num_weights=2)
    assert [w.shape for w in layer.weights] == [(2, 2, 3, 4), (3,)]
    assert layers.Deconvolution2D is layers.Conv2DTranspose is layers.Deconv2D


@pytest.mark.parametrize("kwargs,out_shape", [
    (dict(kernel_size=3), (None, 5, 6, 3)),
    (dict(kernel_size=3, depth_multiplier=2, strides=2, padding="same", activation="relu"), (None, 4, 4, 6)),
    (dict(kernel_size=(2, 3), dilation_rate=2, use_bias=False), (None, 5, 4, 3)),
])
def test_depthwise_conv2d(kwargs, out_shape, parity):
    run_layer_test(layers.DepthwiseConv2D, kwargs, input_shape=(2, 7, 8, 3), expected_output_shape=out_shape,
                   expected_num_weights=1 + kwargs.get("use_bias", True), compare_tf=parity,
                   tf_layer="DepthwiseConv2D", randomize_weights=True, atol=2e-5)


@pytest.mark.parametrize("kwargs,out_shape", [
    (dict(filters=4, kernel_size=3), (None, 5, 6, 4)),
    (dict(filters=5, kernel_size=3, depth_multiplier=2, strides=2, padding="same", activation="tanh"),
     (None, 4, 4, 5)),
    (dict(filters=2, kernel_size=2, dilation_rate=(2, 1), use_bias=False), (None, 5, 7, 2)),
])
def test_separable_conv2d(kwargs, out_shape, parity):
    layer, _, _ = run_layer_test(layers.SeparableConv2D, kwargs, input_shape=(2, 7, 8, 3),
                                 expected_output_shape=out_shape,
                                 expected_num_weights=2 + kwargs.get("use_bias", True), compare_tf=parity,
                                 tf_layer="SeparableConv2D", randomize_weights=True, atol=3e-5)
    assert [w.path.split("/")[-1] for w in layer.weights][:2] == ["depthwise_kernel", "pointwise_kernel"]


@pytest.mark.parametrize("cls,kwargs,out_shape,n_weights", [
    (layers.DepthwiseConv1D, dict(kernel_size=3), (None, 7, 3), 2),
    (layers.DepthwiseConv1D, dict(kernel_size=2, depth_multiplier=2, strides=2, padding="same"), (None, 5, 6), 2),
    (layers.DepthwiseConv1D, dict(kernel_size=3, dilation_rate=2, use_bias=False, activation="relu"), (None, 5, 3), 1),
    (layers.SeparableConv1D, dict(filters=4, kernel_size=3, activation="relu"), (None, 7, 4), 3),
    (layers.SeparableConv1D, dict(filters=2, kernel_size=3, depth_multiplier=2, padding="same", dilation_rate=2,
                                  use_bias=False), (None, 9, 2), 2),
])
def test_depthwise_and_separable_1d(cls, kwargs, out_shape, n_weights, parity):
    run_layer_test(cls, kwargs, input_shape=(2, 9, 3), expected_output_shape=out_shape,
                   expected_num_weights=n_weights, compare_tf=parity, tf_layer=cls.__name__,
                   randomize_weights=True, atol=3e-5)


@pytest.mark.parametrize("kwargs,out_shape", [
    (dict(size=2), (None, 6, 8, 2)),
    (dict(size=(3, 2), interpolation="bilinear"), (None, 9, 8, 2)),
    (dict(size=(2, 1), interpolation="bilinear"), (None, 6, 4, 2)),
])
def test_upsampling2d(kwargs, out_shape, parity):
    run_layer_test(layers.UpSampling2D, kwargs, input_shape=(2, 3, 4, 2), expected_output_shape=out_shape,
                   compare_tf=parity, tf_layer="UpSampling2D")


@pytest.mark.parametrize("cls,kwargs,out_shape", [
    (layers.ZeroPadding2D, dict(padding=1), (None, 5, 6, 2)),
    (layers.ZeroPadding2D, dict(padding=((1, 0), (2, 3))), (None, 4, 9, 2)),
    (layers.Cropping2D, dict(cropping=((1, 0), (2, 1))), (None, 2, 1, 2)),
    (layers.Cropping2D, dict(cropping=1), (None, 1, 2, 2)),
])
def test_padding_and_cropping_2d(cls, kwargs, out_shape, parity):
    run_layer_test(cls, kwargs, input_shape=(2, 3, 4, 2), expected_output_shape=out_shape, compare_tf=parity,
                   tf_layer=cls.__name__)


@pytest.mark.parametrize("cls,kwargs,out_shape", [
    (layers.UpSampling1D, dict(size=3), (None, 15, 2)),
    (layers.ZeroPadding1D, dict(padding=(1, 2)), (None, 8, 2)),
    (layers.Cropping1D, dict(cropping=(2, 1)), (None, 2, 2)),
    (layers.MaxPooling1D, dict(pool_size=2), (None, 2, 2)),
    (layers.MaxPooling1D, dict(pool_size=3, strides=2, padding="same"), (None, 3, 2)),
    (layers.AveragePooling1D, dict(pool_size=2, strides=1), (None, 4, 2)),
    (layers.AveragePooling1D, dict(pool_size=3, strides=2, padding="same"), (None, 3, 2)),
])
def test_1d_layers(cls, kwargs, out_shape, parity):
    run_layer_test(cls, kwargs, input_shape=(2, 5, 2), expected_output_shape=out_shape, compare_tf=parity,
                   tf_layer=cls.__name__)


@pytest.mark.parametrize("cls,kwargs,out_shape,n_weights", [
    (layers.UpSampling2D, dict(size=2, interpolation="bilinear"), (None, 2, 6, 8), 0),
    (layers.ZeroPadding2D, dict(padding=(1, 2)), (None, 2, 5, 8), 0),
    (layers.Cropping2D, dict(cropping=((1, 0), (0, 2))), (None, 2, 2, 2), 0),
    (layers.DepthwiseConv2D, dict(kernel_size=2), (None, 2, 2, 3), 2),
    (layers.SeparableConv2D, dict(filters=3, kernel_size=2), (None, 3, 2, 3), 3),
])
def test_channels_first_2d(cls, kwargs, out_shape, n_weights):
    """channels_first gives the channels_last result, transposed."""
    layer, out, data = run_layer_test(cls, dict(kwargs, data_format="channels_first"), input_shape=(2, 2, 3, 4),
                                      expected_output_shape=out_shape, expected_num_weights=n_weights)
    last = cls(**kwargs)
    last(np.transpose(data[0], (0, 2, 3, 1)))
    last.set_weights(layer.get_weights())
    np.testing.assert_allclose(out, np.transpose(last(np.transpose(data[0], (0, 2, 3, 1))), (0, 3, 1, 2)),
                               atol=1e-6)


def test_keras2_spellings():
    assert layers.Convolution1D is layers.Conv1D
    assert layers.SeparableConvolution2D is layers.SeparableConv2D
    assert layers.SeparableConvolution1D is layers.SeparableConv1D
    assert layers.MaxPool1D is layers.MaxPooling1D and layers.AvgPool1D is layers.AveragePooling1D
    assert layers.deserialize(layers.serialize(layers.Conv2DTranspose(2, 3, name="up"))).name == "up"


def test_conv_family_errors():
    with pytest.raises(ValueError, match=r"Conv1D 'c' expects padding 'valid', 'same' or 'causal'"):
        layers.Conv1D(2, 3, padding="full", name="c")
    with pytest.raises(ShapeError, match=r"expected ndim=3.*Reshape\(\(9, 1\)\)"):
        layers.Conv1D(2, 3)(layers.Input((9,)))
    with pytest.raises(ShapeError, match="fewer than the kernel of 5 with padding='valid'"):
        layers.Conv1D(2, 3, dilation_rate=2)(layers.Input((4, 1)))
    with pytest.raises(ValueError, match="output_padding must be smaller than its stride"):
        layers.Conv2DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="dilation_rate"):
        layers.Conv2DTranspose(2, 3, dilation_rate=2)
    with pytest.raises(ValueError, match="interpolation 'nearest' or 'bilinear'"):
        layers.UpSampling2D(interpolation="bicubic")
    with pytest.raises(ShapeError, match="leaves nothing"):
        layers.Cropping2D(((2, 1), (0, 0)))(layers.Input((3, 4, 1)))
    with pytest.raises(ValueError, match="strides=.*with dilation_rate"):
        layers.DepthwiseConv2D(3, strides=2, dilation_rate=2)


def test_tiny_autoencoder_fits_one_epoch():
    """Conv2D + MaxPooling2D down, Conv2DTranspose + UpSampling2D back up, trained on its input."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (32, 8, 8, 1)).astype("float32")
    inp = layers.Input((8, 8, 1))
    h = layers.Conv2D(4, 3, padding="same", activation="relu")(inp)
    h = layers.MaxPooling2D(2)(h)  # 4x4
    h = layers.Conv2DTranspose(4, 3, strides=2, padding="same", activation="relu")(h)  # 8x8
    h = layers.MaxPooling2D(2)(h)
    h = layers.UpSampling2D(2)(h)
    out = layers.Conv2D(1, 3, padding="same", activation="sigmoid")(h)
    model = models.Model(inp, out)
    model.compile(optimizer="adam", loss="mse")
    before = model.evaluate(x, x, verbose=0)
    hist = model.fit(x, x, batch_size=8, epochs=3, verbose=0)
    assert len(hist.history["loss"]) == 3 and np.isfinite(hist.history["loss"]).all()
    assert model.evaluate(x, x, verbose=0) < before
    assert model.predict(x[:2], verbose=0).shape == (2, 8, 8, 1)


def _chain(k, x_shape):
    """Every layer of this family in one model, built with the layers module `k` (ours or tf.keras')."""
    L = k.layers
    inp = L.Input(x_shape)
    h = L.ZeroPadding2D(1)(inp)
    h = L.DepthwiseConv2D(3, depth_multiplier=2, activation="tanh")(h)
    h = L.SeparableConv2D(3, 3, padding="same", dilation_rate=2)(h)
    h = L.Conv2DTranspose(2, 3, strides=2, padding="same", output_padding=1)(h)
    h = L.Cropping2D(((1, 1), (2, 0)))(h)
    h = L.UpSampling2D((1, 2), interpolation="bilinear")(h)
    h = L.Reshape((-1, 2))(h)
    h = L.Conv1D(3, 3, padding="causal", dilation_rate=2, activation="relu")(h)
    h = L.Conv1DTranspose(3, 2, strides=2, padding="same")(h)
    h = L.SeparableConv1D(3, 3, depth_multiplier=2, padding="same", activation="elu")(h)
    h = L.DepthwiseConv1D(2, strides=2)(h)
    h = L.MaxPooling1D(3, strides=2, padding="same")(h)
    h = L.UpSampling1D(2)(h)
    h = L.ZeroPadding1D((1, 0))(h)
    h = L.Cropping1D((0, 2))(h)
    h = L.AveragePooling1D(2)(h)
    h = L.Flatten()(h)
    return k.models.Model(inp, L.Dense(1)(h))


@pytest.mark.tf
def test_training_steps_match_tf_keras():
    """Two SGD steps of a model chaining every layer here give tf.keras' weights: the backward of every
    op, run by our execution on 2 data-parallel shards, against TensorFlow's gradients."""
    tf = pytest.importorskip("tensorflow")
    from flexflow_keras import config, optimizers

    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 5, 4, 2)).astype("float32")
    y = rng.standard_normal((8, 1)).astype("float32")
    ours, theirs = _chain(__import__("flexflow_keras"), (5, 4, 2)), _chain(tf.keras, (5, 4, 2))
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    ours.compile(optimizer=optimizers.SGD(0.05), loss="mse")
    theirs.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    config.set(only_data_parallel=True, data_parallel_degree=2)
    try:
        ours.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    finally:
        config.reset()
    theirs.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-5)


def test_keras_file_round_trip(tmp_path):
    """A model of every layer here saves to a .keras file and loads back with the same outputs."""
    import flexflow_keras as keras

    model = _chain(keras, (5, 4, 2))
    x = np.random.default_rng(1).standard_normal((3, 5, 4, 2)).astype("float32")
    model.save(tmp_path / "m.keras")
    again = keras.models.load_model(tmp_path / "m.keras")
    assert [type(a).__name__ for a in again.layers] == [type(a).__name__ for a in model.layers]
    np.testing.assert_allclose(again.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6, atol=1e-6)


@pytest.mark.tf
@pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning")
def test_keras_files_interchange_with_tf_keras(tmp_path):  # (the warning is tf.keras' own, saving its model)
    """Our .keras file of every layer here loads in tf.keras with the same outputs, and tf.keras' in ours."""
    tf = pytest.importorskip("tensorflow")
    import flexflow_keras as keras

    x = np.random.default_rng(2).standard_normal((3, 5, 4, 2)).astype("float32")
    ours = _chain(keras, (5, 4, 2))
    ours.save(tmp_path / "ours.keras")
    theirs = tf.keras.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(np.asarray(theirs(x)), ours.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    tf_model = _chain(tf.keras, (5, 4, 2))
    tf_model.save(tmp_path / "theirs.keras")
    back = keras.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(back.predict(x, verbose=0), np.asarray(tf_model(x)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kwargs,out_shape", [
    (dict(filters=3, kernel_size=3, groups=3), (None, 5, 6, 3)),
    (dict(filters=3, kernel_size=7, groups=3, padding="same", activation="gelu"), (None, 7, 8, 3)),
    (dict(filters=3, kernel_size=2, groups=3, strides=2, use_bias=False), (None, 3, 4, 3)),
])
def test_grouped_conv2d_one_group_per_channel(kwargs, out_shape, parity):
    """Conv2D(groups=channels) as ConvNeXt uses it: Keras' kernel shape (kh, kw, 1, filters), run by the
    depthwise op; other group counts are a clear error."""
    layer, _, _ = run_layer_test(layers.Conv2D, kwargs, input_shape=(2, 7, 8, 3), expected_output_shape=out_shape,
                                 expected_num_weights=1 + kwargs.get("use_bias", True), compare_tf=parity,
                                 tf_layer="Conv2D", randomize_weights=True, atol=2e-5)
    assert tuple(layer.kernel.shape)[2:] == (1, 3)
    with pytest.raises(ValueError, match="groups=2 is supported when it equals both"):
        layers.Conv2D(4, 3, groups=2)(np.zeros((1, 5, 5, 4), "float32"))
    with pytest.raises(ValueError, match="multiple of groups"):
        layers.Conv2D(3, 3, groups=2)
