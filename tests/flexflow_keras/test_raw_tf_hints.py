"""The raw-TensorFlow message under `python -m flexflow_keras` names the call and its Keras spelling."""

import pytest

from flexflow_keras.keras_alias import RawTensorFlowError, _TensorFlow
from flexflow_keras.raw_tf_hints import keras_spelling


@pytest.mark.parametrize(("call", "spelling"), [
    ("tf.reduce_mean", "keras.ops.mean"),
    ("tf.concat", "keras.ops.concatenate"),
    ("tf.shape", "keras.ops.shape"),
    ("tf.nn.relu", "keras.ops.relu"),
    ("tf.math.exp", "keras.ops.exp"),
    ("tf.random.normal", "keras.random.normal"),
    ("tf.nn.moments", "keras.ops.moments"),
])
def test_keras_spelling(call, spelling):
    assert keras_spelling(call) == spelling


def test_no_spelling_for_calls_without_an_equivalent():
    assert keras_spelling("tf.py_function") is None
    assert keras_spelling("tf.distribute.MirroredStrategy") is None


def test_tensorflow_activation_functions_are_keras_ones():
    """``Dense(64, activation=tf.nn.relu)``, ``tf.sigmoid(x)`` in a layer: TensorFlow's activation functions
    are Keras' own (same math); the rest of tf.nn stays raw TensorFlow with its hint."""
    import numpy as np

    from flexflow_keras import activations, layers

    tf = _TensorFlow("tensorflow")
    assert activations.get(tf.nn.relu) is activations.relu and activations.get(tf.sigmoid) is activations.sigmoid
    assert activations.get(tf.math.tanh) is activations.tanh and tf.nn.softmax.__name__ == "softmax"
    x = np.array([[-1.0, 2.0]], "float32")
    np.testing.assert_allclose(tf.nn.leaky_relu(x, alpha=0.1), [[-0.1, 2.0]], rtol=1e-6)  # TensorFlow's words
    np.testing.assert_allclose(tf.nn.softmax(x, axis=None, name="p"), activations.softmax(x), rtol=1e-6)
    dense = layers.Dense(2, activation=tf.nn.relu)
    assert dense.get_config()["activation"] == "relu"
    y = dense(np.array([[1.0, -2.0]], "float32"))
    np.testing.assert_allclose(y, np.maximum(np.array([[1.0, -2.0]]) @ dense.get_weights()[0], 0), rtol=1e-6)
    with pytest.raises(RawTensorFlowError, match=r"tf\.nn\.conv2d: raw TensorFlow"):
        tf.nn.conv2d(None, None, 1, "SAME")
    with pytest.raises(RawTensorFlowError, match=r"tf\.math\.exp: raw TensorFlow .*keras\.ops\.exp"):
        tf.math.exp(1.0)


def test_stand_in_tensorflow_message_carries_the_spelling():
    tf = _TensorFlow("tensorflow")
    with pytest.raises(RawTensorFlowError) as info:
        tf.reduce_mean([1.0], axis=-1)
    text = str(info.value)
    assert text.startswith("tf.reduce_mean: raw TensorFlow is not supported")
    assert "(keras.ops.mean)" in text


@pytest.mark.tf
def test_a_layer_calling_tensorflow_itself_is_told_the_line_and_the_keras_call():
    # flexflow_keras imported beside TensorFlow (no `python -m flexflow_keras`): TensorFlow converts the
    # symbolic tensor, and the message must name the script's line and keras.ops, not TensorFlow's insides
    tf = pytest.importorskip("tensorflow")
    import flexflow_keras as keras
    from flexflow_keras.errors import GraphError

    class RawMatmul(keras.layers.Layer):
        def build(self, shape):
            self.w = self.add_weight(shape=(shape[-1], 2))

        def call(self, x):
            return tf.matmul(x, self.w)

    with pytest.raises(GraphError, match=r"test_raw_tf_hints\.py:\d+ \('return tf\.matmul\(x, self\.w\)'\) gave "
                                         r"<KerasTensor .*> to TensorFlow itself: .*\(tf\.matmul -> keras\.ops\.matmul\)"):
        RawMatmul()(keras.Input((4,)))
    with pytest.raises(ValueError, match="is symbolic"):  # anything else converting one keeps the plain message
        import numpy as np

        np.asarray(keras.Input((4,)))
