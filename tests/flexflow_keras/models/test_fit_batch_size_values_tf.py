"""fit's batch_size as Keras 3 reads it: 0 means not given (Keras' adapters take `batch_size or 32`; here
the -b default, 64), an integral float is taken, a negative or fractional one is a clear ValueError (0
was a ZeroDivisionError from the batcher, -3 a `__len__() should return >= 0`)."""

import numpy as np
import pytest

import flexflow_keras as keras


def _model(k):
    m = k.Sequential([k.Input((4,)), k.layers.Dense(2)])
    m.compile("sgd", "mse")
    return m


X, Y = np.ones((40, 4), "float32"), np.ones((40, 2), "float32")


def test_zero_is_the_default_batch_size_as_in_keras():
    tf = pytest.importorskip("tensorflow")
    theirs = _model(tf.keras)
    theirs.fit(X, Y, batch_size=0, verbose=0)
    assert int(theirs.optimizer.iterations.numpy()) == 2  # Keras' default 32: 40 samples in 2 steps
    ours = _model(keras)
    ours.fit(X, Y, batch_size=0, verbose=0)
    assert int(ours.optimizer.iterations) == 1  # the -b default, 64: one step, as with batch_size=None
    ours.fit(X, Y, batch_size=20.0, verbose=0)
    assert int(ours.optimizer.iterations) == 3


@pytest.mark.parametrize("bad", [-3, 2.5, "32", True])
def test_a_negative_or_fractional_batch_size_is_a_clear_error(bad):
    with pytest.raises(ValueError, match=r"fit\(batch_size=.*\): batch_size must be a positive integer"):
        _model(keras).fit(X, Y, batch_size=bad, verbose=0)
