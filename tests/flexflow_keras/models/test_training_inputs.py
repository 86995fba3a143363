"""Arguments of fit/evaluate/predict that used to pass silently: empty x, an out-of-range validation_split;
and `np.array()` of a weight (its value) and of a symbolic tensor (a clear error)."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.errors import DataError


def small_model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.compile("sgd", "sparse_categorical_crossentropy")
    return model


@pytest.mark.parametrize("call", ["fit", "evaluate", "predict"])
def test_zero_samples_is_an_error(call):
    model = small_model()
    x, y = np.zeros((0, 4), np.float32), np.zeros((0,), np.int32)
    args = (x,) if call == "predict" else (x, y)
    with pytest.raises(DataError, match=rf"{call}\(\): x has 0 samples"):
        getattr(model, call)(*args, verbose=0)


@pytest.mark.parametrize("split", [1.5, -0.1, 1.0, float("nan"), "half"])
def test_validation_split_out_of_range_is_an_error(split):
    model = small_model()
    x, y = np.ones((10, 4), np.float32), np.zeros((10,), np.int32)
    with pytest.raises(DataError, match="`validation_split` must be a float between 0 and 1"):
        model.fit(x, y, validation_split=split, epochs=1, verbose=0)


def test_validation_split_too_small_for_the_data():
    model = small_model()
    with pytest.raises(DataError, match="contains 1 samples, which is not sufficient to split"):
        model.fit(np.ones((1, 4), np.float32), np.zeros((1,), np.int32), validation_split=0.5, verbose=0)


def test_validation_split_holds_out_the_last_samples():
    model = small_model()
    batches = []
    counter = keras.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: batches.append(b))
    hist = model.fit(np.ones((10, 4), np.float32), np.zeros((10,), np.int32), validation_split=0.2,
                     batch_size=4, epochs=1, verbose=0, callbacks=[counter])
    assert "val_loss" in hist.history
    assert batches == [0, 1]  # 8 training samples in batches of 4 (10 would make 3)


def test_validation_data_wins_over_validation_split():
    model = small_model()
    x, y = np.ones((10, 4), np.float32), np.zeros((10,), np.int32)
    hist = model.fit(x, y, validation_split=0.0, validation_data=(x, y), epochs=1, verbose=0)
    assert "val_loss" in hist.history


def test_np_array_of_a_variable_is_its_value():
    model = small_model()
    kernel = model.layers[0].kernel
    value = np.array(kernel)
    assert value.dtype == np.float32 and value.shape == (4, 3)
    np.testing.assert_array_equal(value, kernel.numpy())
    assert np.asarray(kernel, dtype=np.float64).dtype == np.float64
    value[...] = 7.0  # a copy: the weight is unchanged
    assert not np.any(kernel.numpy() == 7.0)
    model.fit(np.ones((8, 4), np.float32), np.zeros((8,), np.int32), epochs=1, verbose=0)
    np.testing.assert_array_equal(np.array(kernel), model.get_weights()[0])  # the trained value


def test_np_array_of_a_keras_tensor_is_a_clear_error():
    x = keras.Input((4,))
    with pytest.raises(ValueError, match="is symbolic.*cannot be converted to a NumPy array"):
        np.array(x)
    assert isinstance(np.ones(4) + x, type(x))  # arithmetic with arrays still builds ops
