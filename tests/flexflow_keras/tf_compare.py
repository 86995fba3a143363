"""Shared by the tests that compare a TensorFlow call mapped under the runner with TensorFlow's own
(test_tf_*_ops_tf.py): a dotted path under a `tf` module, and an eager call's tensor, dtype, shape and
values against TensorFlow's."""

import numpy as np

from flexflow_keras.ops.eager_tensor import EagerTensor


def tf_function(root, path: str):
    """`root.<path>` for a dotted path ("math.cumsum")."""
    for part in path.split("."):
        root = getattr(root, part)
    return root


def check_eager_call(tf, fftf, path: str, args, kwargs, rtol: float = 0.0, atol: float = 0.0):
    """tf.<path>(*args, **kwargs) under the runner (`fftf`) gives a tensor with .numpy(), of TensorFlow's
    dtype and shape, with TensorFlow's values (exactly, or within rtol / atol)."""
    want = tf_function(tf, path)(*args, **kwargs)
    got = tf_function(fftf, path)(*args, **kwargs)
    assert isinstance(got, EagerTensor), f"tf.{path} gave {type(got).__name__}, not a tensor with .numpy()"
    assert got.numpy().dtype == want.dtype.as_numpy_dtype and got.shape == tuple(want.shape)
    if rtol or atol:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
