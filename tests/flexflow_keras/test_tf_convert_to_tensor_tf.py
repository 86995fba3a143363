"""tf.convert_to_tensor under the runner, against TensorFlow 2.21. It ran as tf.constant, so a model's
symbolic tensor stopped with '... is symbolic ... cannot be converted to a NumPy array': keras.io's
supervised-contrastive-learning writes TensorFlow Addons' npairs_loss, which starts with
``y_pred = tf.convert_to_tensor(y_pred)``, in its compiled loss. A tensor now comes back as it is (a Variable
is read), a dtype other than its own is TensorFlow's ValueError, and dtype_hint is honoured."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
rng = np.random.default_rng(0)
X = rng.normal(size=(16, 6)).astype("float32")
Y = rng.integers(0, 3, (16, 1))


def _npairs(tfm):
    def npairs_loss(y_true, y_pred):  # TensorFlow Addons' npairs_loss, as the example copies it
        y_pred = tfm.convert_to_tensor(y_pred)
        y_true = tfm.cast(y_true, y_pred.dtype)
        y_true = tfm.expand_dims(y_true, -1)
        y_true = tfm.cast(tfm.equal(y_true, tfm.transpose(y_true)), y_pred.dtype)
        y_true /= tfm.math.reduce_sum(y_true, 1, keepdims=True)
        loss = tfm.nn.softmax_cross_entropy_with_logits(logits=y_pred, labels=y_true)
        return tfm.math.reduce_mean(loss)
    return npairs_loss


def _model(lib, tfm):
    npairs_loss = _npairs(tfm)

    class Contrastive(lib.losses.Loss):
        def call(self, labels, features):
            f = tfm.math.l2_normalize(features, axis=1)
            return npairs_loss(tfm.squeeze(labels), tfm.matmul(f, tfm.transpose(f)) / 0.5)

    class Scale(lib.layers.Layer):
        def build(self, input_shape):
            self.s = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="s")

        def call(self, x):
            return tfm.convert_to_tensor(x) * tfm.convert_to_tensor(self.s, dtype="float32")

    model = lib.Sequential([lib.Input((6,)), lib.layers.Dense(8, activation="tanh"), Scale()])
    model.compile(lib.optimizers.SGD(0.1), loss=Contrastive())
    return model


def test_a_loss_and_a_layer_converting_symbolic_tensors_train_as_tf_keras():
    ours, theirs = _model(ff, FFTF), _model(tf.keras, tf)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours.evaluate(X, Y, batch_size=8, verbose=0),
                               theirs.evaluate(X, Y, batch_size=8, verbose=0), rtol=1e-5)
    h1 = ours.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("value, kwargs", [
    (np.array([1, 2]), {"dtype": "float32"}), ([1, 2], {"dtype_hint": "float32"}), ([1.5], {"dtype_hint": "int32"}),
    (3, {}), (2.5, {}), (np.array([1.0]), {"dtype_hint": "float32"}), ([[1, 2], [3, 4]], {"dtype": "int64"}),
    ([True, False], {}), (np.array([1.5]), {"dtype_hint": "int32"}), (np.array([3], np.int64), {"dtype_hint": "float32"}),
    ([1.0], {"dtype_hint": "int32"}), ([1.1], {"dtype_hint": "float16"}), ([1], {"dtype_hint": "int64"}),
    (np.float64(2.5), {"dtype_hint": "float32"}),
])
def test_eager_values_and_dtypes_equal_tensorflow(value, kwargs):
    ours = np.asarray(FFTF.convert_to_tensor(value, **kwargs))
    theirs = tf.convert_to_tensor(value, **kwargs).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


def test_a_tensor_comes_back_and_is_not_cast():
    t = FFTF.constant([1, 2])
    assert FFTF.convert_to_tensor(t) is t
    assert FFTF.convert_to_tensor(t, dtype="int32") is t
    with pytest.raises(ValueError, match="Tensor conversion requested dtype float32 for Tensor with dtype int32"):
        tf.convert_to_tensor(tf.constant([1, 2]), dtype=tf.float32)
    with pytest.raises(ValueError, match="Tensor conversion requested dtype float32 for Tensor with dtype int32.*"
                                         "tf.cast"):
        FFTF.convert_to_tensor(t, dtype=FFTF.float32)
    x = ff.Input((3,))
    assert FFTF.convert_to_tensor(x) is x
    v = ff.Variable(np.ones(3, np.float32))
    np.testing.assert_array_equal(np.asarray(FFTF.convert_to_tensor(v)), np.ones(3, np.float32))
