"""tf.sqrt, exp, log, log1p, sin, cos, tan, floor, ceil and erf (and their tf.math names) take floating
tensors only in TensorFlow 2.21: an integer or bool tensor, a Python int or a list of them is its
InvalidArgumentError. Ours mapped them to keras.ops, which computes in float: ZTM's TensorFlow course
notebook 00 shows ``tf.sqrt(H)`` of an int64 tensor failing before casting it, and ours returned the roots."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.tf_compat import InvalidArgumentError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
NAMES = ["sqrt", "exp", "math.log", "math.log1p", "sin", "cos", "tan", "floor", "math.ceil", "math.erf", "math.sqrt",
         "math.exp"]
BAD = [lambda t: t.constant(np.arange(1, 10)), lambda t: [1, 4], lambda t: 3, lambda t: t.constant([True]),
       lambda t: np.arange(1, 3, dtype=np.uint8)]
GOOD = [lambda t: t.cast(t.constant(np.arange(1, 10)), t.float32), lambda t: [1.0, 4.0], lambda t: np.float64(2.5)]


def _fn(t, name):
    for part in name.split("."):
        t = getattr(t, part)
    return t


@pytest.mark.parametrize("name", NAMES)
def test_integer_and_bool_inputs_are_refused_as_tensorflow(name):
    for make in BAD:
        with pytest.raises(tf.errors.InvalidArgumentError):
            _fn(tf, name)(make(tf))
        with pytest.raises(InvalidArgumentError, match=r"not in the list of allowed values.*cast first"):
            _fn(FFTF, name)(make(FFTF))


@pytest.mark.parametrize("name", NAMES)
def test_floating_inputs_give_tensorflows_values(name):
    for make in GOOD:
        want = _fn(tf, name)(make(tf)).numpy()
        got = np.asarray(_fn(FFTF, name)(make(FFTF)))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
