"""tf.linalg's qr, svd, eig(vals), eigh / eigvalsh, cholesky, solve, triangular_solve, lstsq, pinv, logdet,
slogdet and matrix_rank under the runner (tf_linalg_decomp.py) against TensorFlow 2.21: values, dtypes and
result types (svd's (s, u, v) order, Qr, LogMatrixDeterminant), first derivatives under our GradientTape
where TensorFlow's equal them here, the error for a gradient through a decomposition, TensorFlow's errors,
and the refusal of a symbolic input. Decompositions are compared up to the signs of their vectors."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.keras_alias import RawTensorFlowError  # noqa: E402
from flexflow_keras.tf_compat import InvalidArgumentError  # noqa: E402
from tests.flexflow_keras.tf_compare import check_eager_call, tf_function  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
SPD = np.array([[[4.0, 1.0, 0.5], [1.0, 3.0, 1.0], [0.5, 1.0, 2.0]],
                [[2.0, -0.3, 0.1], [-0.3, 1.5, 0.2], [0.1, 0.2, 1.0]]], np.float32)
GEN = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 4.0], [5.0, 6.0, 0.0]], np.float32)
TALL = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 2.0], [0.0, 1.0, 1.0], [2.0, 2.0, -1.0]], np.float32)
RHS = np.arange(6, dtype=np.float32).reshape(3, 2) - 1.0

CASES = [
    ("linalg.cholesky", (SPD,), {}), ("linalg.cholesky", (SPD[0].astype(np.float64),), {}),
    ("linalg.solve", (GEN, RHS), {}), ("linalg.solve", (SPD, np.stack([RHS, RHS])), {"adjoint": True}),
    ("linalg.solve", (GEN, RHS), {"adjoint": True}),
    ("linalg.triangular_solve", (GEN + 4 * np.eye(3, dtype=np.float32), RHS), {}),
    ("linalg.triangular_solve", (GEN + 4 * np.eye(3, dtype=np.float32), RHS), {"lower": False, "adjoint": True}),
    ("linalg.triangular_solve", (GEN + 4 * np.eye(3, dtype=np.float32), RHS), {"lower": False}),
    ("linalg.lstsq", (TALL, np.ones((4, 2), np.float32)), {}),
    ("linalg.lstsq", (TALL, np.ones((4, 2), np.float32)), {"l2_regularizer": 0.5}),
    ("linalg.lstsq", (TALL, np.ones((4, 2), np.float32)), {"fast": False}),
    ("linalg.lstsq", (TALL.T.copy(), np.ones((3, 1), np.float32)), {}),
    ("linalg.pinv", (TALL,), {}), ("linalg.pinv", (GEN.astype(np.float64),), {"rcond": 0.1}),
    ("linalg.logdet", (SPD,), {}), ("linalg.slogdet", (GEN,), {}),
    ("linalg.matrix_rank", (TALL,), {}), ("linalg.matrix_rank", (np.ones((3, 3), np.float32),), {}),
    ("linalg.matrix_rank", (TALL,), {"tol": 3.0}), ("linalg.eigvalsh", (SPD,), {}),
    ("linalg.svd", (TALL,), {"compute_uv": False}),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_eager_results_match_tensorflow(case):
    path, args, kwargs = case
    if path == "linalg.slogdet":
        got, want = FFTF.linalg.slogdet(*args), tf.linalg.slogdet(*args)
        assert type(got).__name__ == "LogMatrixDeterminant" and got._fields == want._fields
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype.as_numpy_dtype
            np.testing.assert_allclose(g, w.numpy(), rtol=2e-5, atol=2e-6)
        return
    check_eager_call(tf, FFTF, path, args, kwargs, rtol=2e-5, atol=2e-5)


def _columns_up_to_sign(got, want):
    signs = np.sign(np.sum(got * want, axis=-2, keepdims=True))
    np.testing.assert_allclose(got * signs, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("full", [False, True])
def test_svd_returns_s_u_v_in_tensorflows_order(full):
    got, want = FFTF.linalg.svd(TALL, full_matrices=full), tf.linalg.svd(TALL, full_matrices=full)
    assert isinstance(got, tuple) and len(got) == 3
    for g, w in zip(got, want, strict=True):
        assert g.shape == tuple(w.shape) and g.dtype == w.dtype.as_numpy_dtype
    np.testing.assert_allclose(got[0], want[0].numpy(), rtol=2e-5)
    k = 3
    _columns_up_to_sign(np.asarray(got[1])[:, :k], want[1].numpy()[:, :k])
    _columns_up_to_sign(np.asarray(got[2]), want[2].numpy())
    s, u, v = got
    np.testing.assert_allclose(np.asarray(u)[:, :k] * np.asarray(s) @ np.asarray(v).T, TALL, atol=2e-5)


@pytest.mark.parametrize("full", [False, True])
def test_qr_is_a_qr_namedtuple(full):
    got, want = FFTF.linalg.qr(TALL, full_matrices=full), tf.linalg.qr(TALL, full_matrices=full)
    assert type(got).__name__ == "Qr" and got._fields == ("q", "r")
    assert got.q.shape == tuple(want.q.shape) and got.r.shape == tuple(want.r.shape)
    signs = np.sign(np.diagonal(np.asarray(got.r)) * np.diagonal(want.r.numpy()))
    np.testing.assert_allclose(np.asarray(got.q)[:, :3] * signs, want.q.numpy()[:, :3], atol=2e-5)
    np.testing.assert_allclose(np.asarray(got.r)[:3] * signs[:, None], want.r.numpy()[:3], atol=2e-5)


def test_eigh_and_eig():
    (w, v), (tw, tv) = FFTF.linalg.eigh(SPD), tf.linalg.eigh(SPD)
    np.testing.assert_allclose(w, tw.numpy(), rtol=2e-5)
    _columns_up_to_sign(np.asarray(v), tv.numpy())
    (w, v), (tw, tv) = FFTF.linalg.eig(GEN), tf.linalg.eig(GEN)
    assert w.dtype == np.complex64 and v.dtype == np.complex64 and FFTF.linalg.eigvals(GEN).dtype == np.complex64
    order, torder = np.argsort(np.asarray(w).real), np.argsort(tw.numpy().real)
    np.testing.assert_allclose(np.asarray(w)[order], tw.numpy()[torder], rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(GEN @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-4)


def test_cholesky_of_a_matrix_that_is_not_positive_definite_gives_nans_as_tensorflow():
    assert np.isnan(np.asarray(FFTF.linalg.cholesky(-SPD[0]))).any()
    assert np.isnan(tf.linalg.cholesky(-SPD[0]).numpy()).any()
    assert np.isnan(np.asarray(FFTF.linalg.logdet(-SPD[0]))) and np.isnan(tf.linalg.logdet(-SPD[0]).numpy())


GRADS = {
    "cholesky": lambda t, v: t.reduce_sum(t.linalg.cholesky(v) * np.arange(18, dtype=np.float32).reshape(2, 3, 3)),
    "solve": lambda t, v: t.reduce_sum(t.linalg.solve(v, v[:, :, :2] * 2.0) ** 2),
    "solve_adjoint": lambda t, v: t.reduce_sum(t.linalg.solve(v, np.stack([RHS, RHS]), adjoint=True)),
    "triangular_solve": lambda t, v: t.reduce_sum(t.linalg.triangular_solve(v, np.stack([RHS, RHS])) ** 2),
    "triangular_solve_upper_adjoint": lambda t, v: t.reduce_sum(t.sin(t.linalg.triangular_solve(
        v, v[:, :, 1:], lower=False, adjoint=True))),
    "logdet": lambda t, v: t.reduce_sum(t.linalg.logdet(v) * [1.0, 2.0]),
    "slogdet": lambda t, v: t.reduce_sum(t.linalg.slogdet(v * [[[1.0]], [[-1.0]]]).log_abs_determinant),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_first_derivatives_match_tensorflow(name):
    ours, theirs = keras.Variable(SPD), tf.Variable(SPD)
    with FFTF.GradientTape() as tape:
        loss = GRADS[name](FFTF, ours)
    with tf.GradientTape() as ttape:
        tloss = GRADS[name](tf, theirs)
    np.testing.assert_allclose(np.asarray(loss), tloss.numpy(), rtol=2e-5)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, ours)), ttape.gradient(tloss, theirs).numpy(),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("path", ["linalg.qr", "linalg.eigh", "linalg.pinv", "linalg.svd"])
def test_a_gradient_through_a_decomposition_is_an_error_not_zero(path):
    v = keras.Variable(SPD[0])
    with FFTF.GradientTape() as tape:
        out = tf_function(FFTF, path)(v * 1.0)
        loss = FFTF.reduce_sum(out[0])
    with pytest.raises(Exception, match="no gradient"):
        tape.gradient(loss, v)


ERRORS = [
    ("linalg.qr", (np.eye(2, dtype=np.int32),), "not in the list of allowed values"),
    ("linalg.svd", (np.ones(3, np.float32),), "rank >= 2"),
    ("linalg.eigh", (TALL,), "must be square"),
    ("linalg.cholesky", (np.eye(2, dtype=np.int32),), "not in the list of allowed values"),
    ("linalg.solve", (GEN, RHS[:, 0]), "same rank"),
    ("linalg.solve", (np.ones((2, 2), np.float32), RHS[:2]), "not invertible"),
    ("linalg.triangular_solve", (GEN, RHS[:, 0]), "same rank"),
    ("linalg.lstsq", (TALL, np.ones(4, np.float32)), "same batch shape and rows"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[f"{c[0]}-{i}" for i, c in enumerate(ERRORS)])
def test_errors_are_tensorflows(case):
    path, args, match = case
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf_function(tf, path)(*args)
    with pytest.raises(InvalidArgumentError, match=match):
        tf_function(FFTF, path)(*args)


def test_a_symbolic_input_is_refused_naming_the_call():
    inp = keras.Input((3, 3))
    with pytest.raises(RawTensorFlowError, match=r"tf\.linalg\.cholesky: runs on arrays only"):
        FFTF.linalg.cholesky(inp)
