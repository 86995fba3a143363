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


def test_our_ops_submodules_are_no_spelling():
    """flexflow_keras.ops.gradients is the gradient planner, not a function: keras.io's eikonal recipe
    (tf.gradients in a Lambda) was told to use 'keras.ops.gradients', which Keras has not."""
    assert keras_spelling("tf.gradients") is None
    assert keras_spelling("tf.nn.ctc") is None
    with pytest.raises(RawTensorFlowError, match="GradientTape") as err:
        _TensorFlow("tensorflow").gradients([1.0], [2.0])
    assert "keras.ops.gradients" not in str(err.value)


def test_tensorflow_activation_functions_are_keras_ones():
    """``Dense(64, activation=tf.nn.relu)``, ``tf.sigmoid(x)`` in a layer: TensorFlow's activation functions
    are Keras' own (same math); the rest of tf.nn stays raw TensorFlow with its hint."""
    import numpy as np

    from flexflow_keras import activations, layers

    tf = _TensorFlow("tensorflow")
    assert activations.get(tf.nn.relu) is activations.relu
    # softmax and sigmoid stay TensorFlow's (eagerly their output carries no logits), saved under Keras' name
    assert activations.get(tf.sigmoid) is tf.sigmoid and activations.serialize(tf.sigmoid) == "sigmoid"
    assert activations.get(tf.math.tanh) is activations.tanh and tf.nn.softmax.__name__ == "softmax"
    x = np.array([[-1.0, 2.0]], "float32")
    np.testing.assert_allclose(tf.nn.leaky_relu(x, alpha=0.1), [[-0.1, 2.0]], rtol=1e-6)  # TensorFlow's words
    np.testing.assert_allclose(tf.nn.softmax(x, axis=None, name="p"), activations.softmax(x), rtol=1e-6)
    dense = layers.Dense(2, activation=tf.nn.relu)
    assert dense.get_config()["activation"] == "relu"
    y = dense(np.array([[1.0, -2.0]], "float32"))
    np.testing.assert_allclose(y, np.maximum(np.array([[1.0, -2.0]]) @ dense.get_weights()[0], 0), rtol=1e-6)
    with pytest.raises(RawTensorFlowError, match=r"tf\.nn\.local_response_normalization: raw TensorFlow"):
        tf.nn.local_response_normalization(None)
    m = np.array([[1.0, 5.0], [7.0, 2.0]], "float32")
    arg = tf.math.argmax(m)  # TensorFlow's default axis 0 (Keras' is None, the flattened array), int64
    assert arg.tolist() == [1, 0] and arg.dtype == np.int64 and tf.argmin(m, axis=1).tolist() == [0, 1]
    assert tf.newaxis is None
    with pytest.raises(RawTensorFlowError, match=r"tf\.nn\.ctc_loss: raw TensorFlow .*keras\.ops\.ctc_loss"):
        tf.nn.ctc_loss(np.array([[1]]), np.zeros((1, 2, 3)), [1], [2])  # TensorFlow's arguments differ: not mapped


def test_stand_in_tensorflow_message_carries_the_spelling():
    import numpy as np

    tf = _TensorFlow("tensorflow")
    with pytest.raises(RawTensorFlowError) as info:
        tf.nn.ctc_loss(np.array([[1]]), np.zeros((1, 2, 3)), [1], [2])
    text = str(info.value)
    assert text.startswith("tf.nn.ctc_loss: raw TensorFlow is not supported")
    assert "keras.ops.ctc_loss" in text


def test_saved_model_names_the_keras_format():
    # TensorFlow's text generation tutorial exports its OneStep model with tf.saved_model.save / load
    tf = _TensorFlow("tensorflow")
    for call in (lambda: tf.saved_model.save(object(), "one_step"), lambda: tf.saved_model.load("one_step")):
        with pytest.raises(RawTensorFlowError, match=r"tf\.saved_model\.(save|load): raw .*model\.save\('name\.keras'\)"):
            call()


def test_setup_calls_and_keras_twin_math_run():
    """The lines public scripts open with, and TensorFlow math with the same meaning in keras.ops."""
    import logging

    import numpy as np

    from flexflow_keras import initializers
    from flexflow_keras.utils import rng

    tf = _TensorFlow("tensorflow")
    np.random.seed(5)
    tf.random.set_seed(42)
    first = initializers.GlorotUniform()((3, 2))
    assert np.random.randint(1 << 30) == np.random.RandomState(5).randint(1 << 30)  # NumPy's state untouched
    tf.random.set_seed(42)
    np.testing.assert_array_equal(initializers.GlorotUniform()((3, 2)), first)  # the framework's is seeded
    assert rng.generator() is not None

    def f(a):
        return a + 1

    for wrapped in (tf.function(f), tf.function(jit_compile=True)(f), tf.function()(f)):
        assert wrapped(2) == 3 and wrapped.python_function is f and wrapped.__wrapped__ is f
    assert tf.get_logger() is logging.getLogger("flexflow_keras")
    level = tf.get_logger().level
    try:
        tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
        assert tf.get_logger().level == logging.ERROR
    finally:
        tf.get_logger().setLevel(level)
    assert tf.autograph.set_verbosity(0) is None
    assert tf.config.list_physical_devices("GPU") == [] and len(tf.config.list_physical_devices("CPU")) == 1

    x = np.array([[1.0, -2.0], [3.0, 4.0]], "float32")
    np.testing.assert_allclose(tf.reduce_mean(x, axis=1, keepdims=True), [[-0.5], [3.5]])
    np.testing.assert_allclose(tf.math.exp(x), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(tf.where(tf.equal(x, 1.0), x, tf.zeros_like(x)), [[1, 0], [0, 0]])
    np.testing.assert_allclose(tf.concat([x, x], 0).shape, (4, 2))
    np.testing.assert_allclose(tf.math.squared_difference(x, 1.0), (x - 1) ** 2)
    assert tf.cast(tf.constant([1, 2]), tf.float32).dtype == np.float32
    with pytest.raises(RawTensorFlowError, match=r"tf\.ones_like\(\) .*optimize.*runs as keras\.ops\.ones_like"):
        tf.ones_like(x, optimize=True)  # an argument only TensorFlow's function has
    # the one-argument form: the coordinates of the true entries, int64 (test_tf_sparse_tf.py compares them)
    np.testing.assert_array_equal(tf.where(x > 0), np.argwhere(x > 0))
    # TensorFlow's dtypes and integer math
    assert tf.reduce_mean(np.array([1, 2, 3, 4])) == 2 and tf.reduce_mean(np.array([1, 2, 3, 4])).dtype.kind == "i"
    assert tf.divide(np.array([1, 2]), np.array([2, 2])).dtype == np.float64
    assert tf.constant(3).dtype == np.int32 and tf.constant(3.0).dtype == np.float32
    assert tf.constant(np.zeros(2)).dtype == np.float64 and tf.constant(0.5, shape=(2, 2)).shape == (2, 2)
    tf.random.set_seed(None)  # TensorFlow takes None and any integer
    tf.random.set_seed(-5)
    tf.config.experimental.set_memory_growth(None, True)  # GPU memory is -ll:fsize's: nothing to set
    from flexflow_keras.errors import ConfigError

    with pytest.raises(ConfigError, match="-ll:gpu N"):
        tf.config.set_visible_devices([], "GPU")
    # shapes, ranges, printing: the keras-io examples' tf.shape(x)[-1] and tf.range(start=, limit=, delta=)
    np.testing.assert_array_equal(tf.shape(x) * 2, [4, 4])  # an array, as TensorFlow's tensor
    from flexflow_keras import Input

    assert tf.shape(Input((20,)))[-1] == 20
    np.testing.assert_array_equal(tf.range(start=0, limit=6, delta=2), [0, 2, 4])
    np.testing.assert_allclose(tf.linspace(0.0, 1.0, 3), [0, 0.5, 1])
    assert tf.compat.as_bytes("ab") == b"ab"
    import io

    out = io.StringIO()
    tf.print("loss", np.float32(0.5), output_stream=out)
    assert out.getvalue() == "loss 0.5\n"


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


def test_keras_ops_submodules():
    """Keras 3's keras.ops.numpy / nn / math / core spellings reach the same functions; keras.ops.linalg and
    keras.ops.image are submodules (`import keras.ops.linalg` too)."""
    from flexflow_keras import ops

    assert ops.numpy.sum is ops.sum and ops.math.exp is ops.exp and ops.core.cast is ops.cast
    assert ops.nn.relu is ops.relu and ops.nn.softmax is ops.softmax
    import flexflow_keras.ops.nn as knn  # the import spelling too (`import keras.ops.nn as nn`)

    assert knn.sigmoid is ops.sigmoid
    import flexflow_keras.ops.linalg as klinalg

    assert klinalg is ops.linalg and ops.linalg.qr is ops.qr and ops.linalg.norm is ops.norm
    assert callable(ops.image.extract_patches)


def test_tensorflow_calls_custom_loops_use():
    """tf.one_hot (on/off values), tf.split (sizes or a count), tf.repeat, tf.clip_by_value,
    tf.nn.sigmoid_cross_entropy_with_logits, tf.UnconnectedGradients and a tf.Module model."""
    import numpy as np

    tf = _TensorFlow("tensorflow")
    assert tf.one_hot([0, 2], 3).tolist() == [[1, 0, 0], [0, 0, 1]]
    assert tf.one_hot([1], 2, on_value=5.0, off_value=-1.0).tolist() == [[-1.0, 5.0]]
    x = np.arange(12, dtype="float32").reshape(2, 6)
    parts = tf.split(x, [1, 3, -1], axis=1)
    assert [p.shape for p in parts] == [(2, 1), (2, 3), (2, 2)] and parts[2].tolist() == [[4, 5], [10, 11]]
    assert [p.shape for p in tf.split(x, 2, axis=0)] == [(1, 6), (1, 6)]
    assert tf.repeat(np.array([1, 2]), 2).tolist() == [1, 1, 2, 2]
    assert tf.clip_by_value(np.array([-2.0, 0.5, 3.0]), 0.0, 1.0).tolist() == [0.0, 0.5, 1.0]
    z, logits = np.array([0.0, 1.0]), np.array([2.0, -1.0])
    np.testing.assert_allclose(tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=logits),
                               np.log1p(np.exp(logits)) - logits * z, rtol=1e-6)
    assert tf.UnconnectedGradients.ZERO == "zero"

    class Linear(tf.Module):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.w = tf.Variable(5.0)
            self.b = tf.Variable(0.0, trainable=False)

        def __call__(self, v):
            return self.w * v + self.b

    model = Linear(name="linear")
    assert model.name == "linear" and float(model(3.0).numpy()) == 15.0
    assert len(model.variables) == 2 and len(model.trainable_variables) == 1


def test_more_tensorflow_calls_of_custom_loops():
    """tf.matmul's transpose flags, l2_normalize, eye, pad modes, expand_dims of a number, stop_gradient,
    random_normal_initializer (keras.io SimCLR, CycleGAN, pix2pix, actor-critic)."""
    import numpy as np

    tf = _TensorFlow("tensorflow")
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(tf.matmul(a, b, transpose_b=True), a @ b.T)
    c = np.arange(8.0).reshape(2, 4)
    np.testing.assert_allclose(tf.matmul(c, a, transpose_a=True), c.T @ a)
    np.testing.assert_allclose(tf.linalg.matmul(b, c, transpose_a=True, transpose_b=True), b.T @ c.T)
    np.testing.assert_allclose(tf.math.l2_normalize(a, axis=1), a / np.linalg.norm(a, axis=1, keepdims=True),
                               rtol=1e-6)
    assert tf.eye(2, batch_shape=[3]).shape == (3, 2, 2) and tf.eye(3)[1].tolist() == [0, 1, 0]
    np.testing.assert_array_equal(tf.pad(a, [[0, 0], [2, 1]], "REFLECT"), np.pad(a, [[0, 0], [2, 1]], "reflect"))
    np.testing.assert_array_equal(tf.pad(a, [[1, 1], [0, 0]], constant_values=7), np.pad(a, 1, constant_values=7)[:, 1:-1])
    assert tf.expand_dims(2.5, 0).shape == (1,) and tf.stop_gradient(a).tolist() == a.tolist()
    assert tf.tile(a, multiples=[1, 2]).shape == (2, 6)
    init = tf.random_normal_initializer(0.0, 0.02)
    assert abs(float(np.std(init((200, 50), "float32"))) - 0.02) < 0.002


def test_numpy_function_and_py_function_run_on_values_in_a_dataset_map():
    """keras.io's 3-D CT example wraps a SciPy rotation in tf.numpy_function inside Dataset.map."""
    import numpy as np

    import flexflow_keras as keras
    from flexflow_keras.errors import ArgumentError

    tf = _TensorFlow("tensorflow")

    def flip(v):
        assert type(v) is np.ndarray
        return v[::-1] * 2

    def count(v):
        return v.numpy().sum(), v.shape[0]

    x = np.arange(24, dtype="float32").reshape(4, 6)
    ds = tf.data.Dataset.from_tensor_slices(x).map(lambda v: tf.numpy_function(flip, [v], tf.float32)).batch(2)
    got = np.concatenate([np.asarray(b) for b in ds])
    np.testing.assert_array_equal(got, x[:, ::-1] * 2)
    assert got.dtype == np.float32
    total, n = tf.py_function(count, [x[0]], [tf.float64, tf.int32])
    assert float(total) == 15.0 and total.dtype == np.float64 and int(n) == 6 and n.dtype == np.int32
    (one,) = tf.numpy_function(lambda v: v * 2, [x[0]], [tf.float32])  # a list of one dtype, one array back
    np.testing.assert_array_equal(one, x[0] * 2)
    words = tf.numpy_function(lambda v: np.array([b"a", b"bc"]), [x[0]], tf.string)
    assert list(words) == [b"a", b"bc"]
    with pytest.raises(ArgumentError, match="returned 1 value.* one value per dtype"):
        tf.py_function(lambda v: v, [x[0]], [tf.float32, tf.float32])
    with pytest.raises(ArgumentError, match="tf.numpy_function runs a Python function on values"):
        tf.numpy_function(flip, [keras.Input((3,))], tf.float32)


def test_importing_tensorflows_internals_is_the_raw_tensorflow_message(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "internals.py"
    script.write_text("from tensorflow.python.types.core import Tensor\n")
    proc = subprocess.run([sys.executable, "-m", "flexflow_keras", str(script)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "import tensorflow.python.types: raw TensorFlow is not supported" in proc.stderr
