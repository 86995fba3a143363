"""The dtype of tf.signal's Fourier transforms for each kind of input, as TensorFlow 2.21 gives it: a value that
is not a tensor (a NumPy array, a pandas Series, a list) is converted with TensorFlow's float32 / complex64
preference, so a float64 NumPy signal gives a complex64 spectrum (and a complex128 array an fft's complex64,
an irfft's float32); a tensor keeps its dtype (tf.constant of float64 gives complex128), in a Dataset.map too.
TensorFlow's time-series tutorial runs tf.signal.rfft(df['T (degC)']) on a float64 column: ours gave complex128
(and float64 arithmetic) where TensorFlow gives complex64."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pd = pytest.importorskip("pandas")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
X64 = np.sin(np.arange(16) / 3.0) + 0.1 * np.arange(16)
C128 = np.fft.fft(X64)


def _cases(t):
    return {
        "rfft numpy float64": lambda: t.signal.rfft(X64),
        "rfft pandas float64": lambda: t.signal.rfft(pd.Series(X64)),
        "rfft list": lambda: t.signal.rfft([1.0, 2.0, 3.0, 4.0]),
        "rfft numpy float32": lambda: t.signal.rfft(X64.astype(np.float32)),
        "rfft tensor float64": lambda: t.signal.rfft(t.constant(X64)),
        "rfft2d numpy float64": lambda: t.signal.rfft2d(X64.reshape(4, 4)),
        "irfft numpy complex128": lambda: t.signal.irfft(C128[:9]),
        "irfft tensor complex128": lambda: t.signal.irfft(t.constant(C128[:9])),
        "fft numpy complex128": lambda: t.signal.fft(C128),
        "ifft2d numpy complex128": lambda: t.signal.ifft2d(C128.reshape(4, 4)),
        "fft tensor complex128": lambda: t.signal.fft(t.constant(C128)),
        "rfft in map": lambda: next(iter(t.data.Dataset.from_tensor_slices(X64.reshape(2, 8)).map(
            lambda x: t.signal.rfft(x)))),
    }


def _dtype_name(value) -> str:
    return np.dtype(getattr(value.dtype, "as_numpy_dtype", value.dtype)).name


@pytest.mark.parametrize("case", list(_cases(tf)))
def test_fourier_dtype_per_input_kind_as_tf(case):
    theirs = _cases(tf)[case]()
    ours = _cases(FFTF)[case]()
    assert _dtype_name(ours) == _dtype_name(theirs)
    tol = 1e-5 if _dtype_name(theirs) in ("complex64", "float32") else 1e-12
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=tol, atol=tol * 10)
