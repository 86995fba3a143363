"""tf.linalg's inv, det, diag, diag_part, trace and matvec under the runner (tf_linalg_ops.py) against
TensorFlow 2.21: values and dtypes on batches of matrices, first derivatives under a GradientTape (inv and
det eager, the rest also symbolic in a model), TensorFlow's errors and refused arguments."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402
from flexflow_keras.tf_compat import InvalidArgumentError  # noqa: E402
from tests.flexflow_keras.tf_compare import check_eager_call, tf_function  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
A = np.array([[[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]],
              [[1.0, 2.0, 3.0], [0.0, 1.0, 4.0], [5.0, 6.0, 0.0]]], np.float32)
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
P = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


CASES = [
    ("linalg.inv", (A,), {}), ("linalg.inv", (A[0].astype(np.float64),), {"adjoint": True}),
    ("linalg.det", (A,), {}), ("linalg.det", (SINGULAR,), {}), ("linalg.det", ([[1.0, 2.0], [3.0, 4.0]],), {}),
    ("linalg.diag", (np.array([[1.0, 2.0], [3.0, 4.0]], np.float32),), {}), ("linalg.diag", ([1, 2, 3],), {}),
    ("linalg.diag_part", (P,), {}), ("linalg.diag_part", (A,), {}), ("linalg.trace", (P,), {}),
    ("linalg.trace", (np.arange(6).reshape(2, 3),), {}), ("linalg.matvec", (P, np.ones(4, np.float32)), {}),
    ("linalg.matvec", (P, np.arange(6, dtype=np.float32).reshape(2, 3)), {"transpose_a": True}),
    ("linalg.matvec", (A, A[:, 0]), {"adjoint_a": True}),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_eager_results_match_tensorflow(case):
    path, args, kwargs = case
    check_eager_call(tf, FFTF, path, args, kwargs, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("path", ["linalg.inv", "linalg.det", "linalg.diag_part", "linalg.trace", "linalg.diag"])
def test_first_derivatives_match_tensorflow(path):
    w = np.linspace(-1.0, 2.0, 18, dtype=np.float32).reshape(A.shape)
    x = A[:, :, 0] if path == "linalg.diag" else A
    w = w[:, :, 0] if path == "linalg.diag" else w
    v, tv = keras.Variable(x), tf.Variable(x)
    with FFTF.GradientTape() as tape:
        loss = FFTF.reduce_sum(tf_function(FFTF, path)(v * 1.5) * (w.sum(-1) if path in ("linalg.diag_part",) else 1.0))
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_sum(tf_function(tf, path)(tv * 1.5) * (w.sum(-1) if path in ("linalg.diag_part",) else 1.0))
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v)), ttape.gradient(tloss, tv).numpy(), rtol=1e-4,
                               atol=1e-5)


def test_det_gradient_at_a_singular_matrix_is_the_cofactors():
    v = keras.Variable(SINGULAR)
    with FFTF.GradientTape() as tape:
        d = FFTF.linalg.det(v)
    assert float(np.asarray(d)) == 0.0
    np.testing.assert_allclose(np.asarray(tape.gradient(d, v)), [[4.0, -2.0], [-2.0, 1.0]])


def test_matvec_is_differentiated_and_symbolic(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp = keras.Input((3,))
    outs = [FFTF.linalg.matvec(A[0], inp), FFTF.linalg.diag(inp), FFTF.linalg.trace(FFTF.linalg.diag(inp)),
            FFTF.linalg.diag_part(FFTF.expand_dims(inp, 1) * np.ones((3, 1), np.float32))]
    x = A[1]
    wants = [tf.linalg.matvec(A[0], x), tf.linalg.diag(x), tf.linalg.trace(tf.linalg.diag(x)),
             tf.linalg.diag_part(x[:, None, :] * np.ones((3, 1), np.float32))]
    for got, want in zip(keras.Model(inp, outs).predict(x, verbose=0), wants, strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)
    v, tv = keras.Variable(A[0]), tf.Variable(A[0])
    with FFTF.GradientTape() as tape:
        loss = FFTF.reduce_sum(FFTF.square(FFTF.linalg.matvec(v, A[1, 0], transpose_a=True)))
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_sum(tf.square(tf.linalg.matvec(tv, A[1, 0], transpose_a=True)))
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v)), ttape.gradient(tloss, tv).numpy(), rtol=1e-6)


def test_errors_and_refusals():
    with pytest.raises(InvalidArgumentError, match="Input is not invertible"):
        FFTF.linalg.inv(SINGULAR)
    with pytest.raises(InvalidArgumentError, match="not in the list of allowed values"):
        FFTF.linalg.inv([[1, 2], [3, 4]])
    with pytest.raises(InvalidArgumentError, match="square matrices"):
        FFTF.linalg.det(P)
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.linalg.inv"):
        FFTF.linalg.inv(keras.Input((3, 3)))
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.linalg.diag.*k=0"):
        FFTF.linalg.diag([1.0, 2.0], k=1)
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.linalg.diag_part.*padding_value"):
        FFTF.linalg.diag_part(A, padding_value=9)
