"""`tf.data.Dataset.from_tensor_slices` / `from_tensors` of Python lists give tf.convert_to_tensor's dtypes, as
TensorFlow 2.21: ints int32 (int64 past int32's range), floats float32, bools bool; NumPy arrays keep theirs.
The TensorFlow Developer certificate's text labs slice ``(sentences, labels)`` with labels a Python list of
ints; ours gave int64 labels (and float64 for a list of floats)."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")

CASES = {
    "ints": [1, 0, 1],
    "floats": [0.5, 1.5, 2.0],
    "ints and floats": [1, 2.5, 3],
    "bools": [True, False, True],
    "nested ints": [[1, 2], [3, 4], [5, 6]],
    "past int32": [1, 2**40, 3],
    "numpy float64 inside": [np.float64(1.0), 2.0, 3.0],
    "numpy int64 array": np.array([1, 2, 3], dtype="int64"),
    "numpy float64 array": np.array([1.0, 2.0]),
    "text and int labels": (["a b", "c", "d e f"], [1, 0, 1]),
    "dict of lists": {"x": [1.0, 2.0], "y": [3, 4]},
}


def _dtypes(value):
    if isinstance(value, dict):
        return {k: _dtypes(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_dtypes(v) for v in value)
    dtype = value.dtype
    return getattr(dtype, "name", str(dtype))


@pytest.mark.parametrize("case", list(CASES))
def test_from_tensor_slices_dtypes_as_tf(case):
    for make in (lambda t: t.data.Dataset.from_tensor_slices(CASES[case]),
                 lambda t: t.data.Dataset.from_tensor_slices(CASES[case]).batch(2),
                 lambda t: t.data.Dataset.from_tensors(CASES[case])):
        ours, theirs = next(iter(make(FFTF))), next(iter(make(tf)))
        assert _dtypes(ours) == _dtypes(theirs)


def test_values_unchanged():
    ours = [np.asarray(v).tolist() for v in FFTF.data.Dataset.from_tensor_slices([1, 2**40, 3])]
    assert ours == [1, 2**40, 3]
    ours = [np.asarray(v).tolist() for v in FFTF.data.Dataset.from_tensor_slices([0.5, 1.5])]
    assert ours == [0.5, 1.5]
