"""Conv2D and the pooling layers through the layer harness (channels_last and channels_first)."""

import numpy as np
import pytest
from ff_layer_harness import run_layer_test

from flexflow_keras import backend, layers
from flexflow_keras.errors import ShapeError


@pytest.mark.parametrize("kwargs,out_shape", [
    (dict(filters=4, kernel_size=3), (None, 6, 6, 4)),
    (dict(filters=3, kernel_size=(3, 2), strides=2, padding="same", activation="relu"), (None, 4, 4, 3)),
    (dict(filters=2, kernel_size=2, use_bias=False, activation="softmax"), (None, 7, 7, 2)),
])
def test_conv2d(kwargs, out_shape, parity):
    n_weights = 2 if kwargs.get("use_bias", True) else 1
    run_layer_test(layers.Conv2D, kwargs, input_shape=(2, 8, 8, 3), expected_output_shape=out_shape,
                   expected_num_weights=n_weights, compare_tf=parity, tf_layer="Conv2D")


def test_conv2d_kernel_layout_is_keras():
    layer = layers.Conv2D(5, (3, 2))
    layer(np.zeros((1, 6, 6, 4), "float32"))
    assert [w.shape for w in layer.weights] == [(3, 2, 4, 5), (5,)]
    assert [w.path for w in layer.weights] == ["conv2d/kernel", "conv2d/bias"]


def test_conv2d_channels_first():
    run_layer_test(layers.Conv2D, dict(filters=4, kernel_size=3, data_format="channels_first"),
                   input_shape=(2, 3, 7, 7), expected_output_shape=(None, 4, 5, 5), expected_num_weights=2)


def test_conv2d_follows_the_global_data_format():
    backend.set_image_data_format("channels_first")
    assert layers.Conv2D(2, 3).data_format == "channels_first"
    assert layers.Flatten().data_format == "channels_first"


def test_conv2d_errors():
    with pytest.raises(ShapeError, match=r"Input 0 of layer 'c' is incompatible: expected ndim=4, got shape "
                                         r"\(None, 28, 28\)\. Add a channels dim, e\.g\. Reshape\(\(28, 28, 1\)\)"):
        layers.Conv2D(4, 3, name="c")(layers.Input((28, 28)))
    with pytest.raises(ValueError, match=r"Conv2D 'c2' expects padding 'valid' or 'same', received padding='full'"):
        layers.Conv2D(4, 3, padding="full", name="c2")
    with pytest.raises(ValueError, match=r"Conv2D 'c3': `strides > 1` not supported in conjunction with "
                                         r"`dilation_rate > 1` \(as in Keras\)\. Received: strides=\(2, 1\) and "
                                         r"dilation_rate=\(1, 2\)\. Use strides=1"):
        layers.Conv2D(4, 3, strides=(2, 1), dilation_rate=(1, 2), name="c3")
    with pytest.raises(ShapeError, match=r"the \(3, 3\) kernel dilated by \(2, 2\) \(spanning \(5, 5\)\) is "
                                         r"larger than the 4x4 input"):
        layers.Conv2D(4, 3, dilation_rate=2)(layers.Input((4, 4, 1)))
    with pytest.raises(ShapeError, match="larger than the 2x2 input"):
        layers.Conv2D(4, 3)(layers.Input((2, 2, 1)))
    conv = layers.Conv2D(4, 3)
    conv(np.zeros((1, 5, 5, 3), "float32"))
    with pytest.raises(ShapeError, match="expected last dim 3"):
        conv(np.zeros((1, 5, 5, 1), "float32"))


@pytest.mark.parametrize("cls,tf_name", [(layers.MaxPooling2D, "MaxPooling2D"),
                                         (layers.AveragePooling2D, "AveragePooling2D")])
@pytest.mark.parametrize("kwargs,out_shape", [
    (dict(pool_size=2), (None, 3, 4, 2)),
    (dict(pool_size=3, strides=2, padding="same"), (None, 4, 4, 2)),
    (dict(pool_size=(2, 3), strides=1), (None, 6, 6, 2)),
])
def test_pooling(cls, tf_name, kwargs, out_shape, parity):
    run_layer_test(cls, kwargs, input_shape=(2, 7, 8, 2), expected_output_shape=out_shape, compare_tf=parity, tf_layer=tf_name)


def test_pooling_channels_first():
    run_layer_test(layers.MaxPooling2D, dict(data_format="channels_first"), input_shape=(2, 3, 6, 6),
                   expected_output_shape=(None, 3, 3, 3))


@pytest.mark.parametrize("cls,tf_name", [(layers.GlobalAveragePooling2D, "GlobalAveragePooling2D"),
                                         (layers.GlobalMaxPooling2D, "GlobalMaxPooling2D")])
@pytest.mark.parametrize("keepdims", [False, True])
def test_global_pooling_2d(cls, tf_name, keepdims, parity):
    out = (None, 1, 1, 3) if keepdims else (None, 3)
    run_layer_test(cls, dict(keepdims=keepdims), input_shape=(2, 5, 4, 3), expected_output_shape=out, compare_tf=parity, tf_layer=tf_name)


@pytest.mark.parametrize("cls,tf_name", [(layers.GlobalAveragePooling1D, "GlobalAveragePooling1D"),
                                         (layers.GlobalMaxPooling1D, "GlobalMaxPooling1D")])
def test_global_pooling_1d(cls, tf_name, parity):
    run_layer_test(cls, {}, input_shape=(2, 6, 3), expected_output_shape=(None, 3), compare_tf=parity, tf_layer=tf_name)
