"""`tf.function` under `python -m flexflow_keras` (handson-ml3 ch. 12 "TF Functions"): the Python function
runs as it is, an `input_signature` binds as TensorFlow's does (compatible shapes pass, an incompatible one is
a TypeError), methods stay methods, and `get_concrete_function` is an error saying that graphs are
TensorFlow's; Python results come back as tensors. Before: tf.function returned the function unchanged, so the signature was not checked and
get_concrete_function was a bare AttributeError."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras.keras_alias import RawTensorFlowError, _TensorFlow  # noqa: E402

FFTF = _TensorFlow("tensorflow")


def _run(T):
    @T.function(input_signature=[T.TensorSpec([None, 28, 28], T.float32)])
    def shrink(images):
        return images[:, ::2, ::2]

    out = [np.asarray(shrink(T.ones([3, 28, 28]))).shape, np.asarray(shrink(T.zeros([1, 28, 28]))).shape]
    for bad in (T.ones([2, 2, 2]), T.ones([3, 28, 28], dtype=T.int32)):
        with pytest.raises(TypeError):
            shrink(bad)

    class Counter:
        def __init__(self):
            self.counter = T.Variable(0)

        @T.function
        def increment(self, c=1):
            return self.counter.assign_add(c)

    c = Counter()
    c.increment()
    out.append(int(np.asarray(c.increment(3))))
    return out


def test_input_signature_and_methods_as_tensorflow():
    assert _run(FFTF) == _run(tf) == [(3, 14, 14), (1, 14, 14), 4]


def test_python_results_become_tensors_as_tensorflow():
    got = []
    for T in (tf, FFTF):
        cube = T.function(lambda x: x ** 3)
        pair = T.function(lambda: (2, 1.5, {"n": True}))()
        got.append([(str(np.asarray(r).dtype), np.asarray(r).tolist())
                    for r in (cube(2), cube(T.constant(2.0)), pair[0], pair[1], pair[2]["n"])])
    assert got[0] == got[1]


def test_concrete_functions_are_refused_with_a_reason():
    f = FFTF.function(lambda x: x ** 3)
    with pytest.raises(RawTensorFlowError, match="graphs .* are TensorFlow's"):
        f.get_concrete_function(FFTF.constant(2.0))
    assert int(f(2)) == 8
