"""A mapped TensorFlow function called with a missing or unknown argument under `python -m flexflow_keras`
(tf.divide(x)) raises a TypeError, as TensorFlow does, naming the function, what is wrong with the arguments
and the parameters its stand-in takes. It raised RawTensorFlowError (an AttributeError), which a script's
`except TypeError` did not catch."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
X = np.array([1.0, 2.0], np.float32)

CASES = [
    ("divide", (X,), {}, "missing a required argument: 'y'"),
    ("math.divide", (X,), {}, "missing a required argument: 'y'"),
    ("concat", ([X, X],), {}, "missing a required argument: 'axis'"),
    ("cast", (X,), {}, "missing a required argument: 'dtype'"),
    ("math.exp", (X,), {"foo": 1}, "unexpected keyword argument 'foo'"),
]


def _get(root, path):
    for part in path.split("."):
        root = getattr(root, part)
    return root


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_wrong_arguments_are_a_type_error_as_in_tensorflow(case):
    path, args, kwargs, problem = case
    with pytest.raises(TypeError):
        _get(tf, path)(*args, **kwargs)
    with pytest.raises(TypeError) as err:
        _get(FFTF, path)(*args, **kwargs)
    text = str(err.value)
    assert text.startswith(f"tf.{path}() ") and problem in text
    assert "raw TensorFlow is not supported" not in text


def test_right_arguments_still_run():
    np.testing.assert_allclose(FFTF.divide(X, 2.0), tf.divide(X, 2.0).numpy())
