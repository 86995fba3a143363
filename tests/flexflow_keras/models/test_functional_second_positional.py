"""A functional model called with a second positional argument that is not a training flag: Keras' call
(inputs, training=None, mask=None) reads it as `training` and fails ('got multiple values for argument
training'); here it is a TypeError saying to pass the inputs as one list, not NumPy's 'truth value of an
array is ambiguous' from deep inside call()."""

import numpy as np
import pytest

import flexflow_keras as keras


def _model():
    a, b = keras.Input((3,)), keras.Input((3,))
    return keras.Model([a, b], keras.layers.Add()([a, b]), name="pair")


def test_a_second_array_is_a_clear_type_error():
    x = np.ones((2, 3), "float32")
    with pytest.raises(TypeError, match=r"Model 'pair' .* second positional argument .*model\(\[x1, x2\]\)"):
        _model()(x, x)


def test_training_flags_and_one_list_still_work():
    x = np.ones((2, 3), "float32")
    model = _model()
    np.testing.assert_array_equal(np.asarray(model([x, x])), 2 * x)
    # a positional flag: tf.keras 3.15 raises TypeError ('Functional.call() got multiple values for argument
    # training'); ours refuses it as Keras 3 refuses it for other layers, naming the keyword form
    with pytest.raises(ValueError, match=r"Layer 'pair'.*keyword argument.*pair\(x, training=False\)"):
        model([x, x], False)
    np.testing.assert_array_equal(np.asarray(model([x, x], training=False)), 2 * x)
    np.testing.assert_array_equal(np.asarray(model([x, x], training=True)), 2 * x)
