"""keras.ops.linalg (ops/linalg.py) against Keras 3 on TensorFlow: values, dtypes, shapes and result
structures in float32 and float64, decompositions up to their sign and order freedom, Keras' and
TensorFlow's errors, and the refusal on a model's symbolic tensors."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")  # Keras 3 on the TensorFlow backend

from keras_parity import assert_same, assert_same_error, to_numpy  # noqa: E402

from flexflow_keras import layers, ops  # noqa: E402
from flexflow_keras.errors import ArgumentError  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(7)
SQ = rng.standard_normal((2, 4, 4))
SPD = SQ @ np.swapaxes(SQ, -1, -2) + 4 * np.eye(4)
TALL = rng.standard_normal((2, 5, 3))
B_VEC = rng.standard_normal((2, 4))
B_MAT = rng.standard_normal((2, 4, 3))
LOW = np.tril(SQ) + 3 * np.eye(4)

EXACT = {  # results with no sign or order freedom: equal to Keras' within float tolerance
    "cholesky": lambda K, c: K.cholesky(c(SPD)),
    "cholesky_upper": lambda K, c: K.cholesky(c(SPD), upper=True),
    "cholesky_inverse": lambda K, c: K.cholesky_inverse(c(np.linalg.cholesky(SPD[0]))),
    "cholesky_inverse_upper": lambda K, c: K.cholesky_inverse(c(np.linalg.cholesky(SPD[0]).T), upper=True),
    "det": lambda K, c: K.det(c(SQ)),
    "det_2d": lambda K, c: K.det(c(SQ[0])),
    "inv": lambda K, c: K.inv(c(SQ)),
    "logdet": lambda K, c: K.logdet(c(SPD)),
    "logdet_not_pd": lambda K, c: K.logdet(c(-SPD[0])),  # NaN, as TensorFlow
    "solve_vec": lambda K, c: K.solve(c(SQ), c(B_VEC)),
    "solve_mat": lambda K, c: K.solve(c(SQ), c(B_MAT)),
    "solve_2d": lambda K, c: K.solve(c(SQ[0]), c(B_VEC[0])),
    "solve_triangular_upper": lambda K, c: K.solve_triangular(c(np.swapaxes(LOW, -1, -2)), c(B_MAT)),
    "solve_triangular_lower": lambda K, c: K.solve_triangular(c(LOW), c(B_VEC), lower=True),
    "solve_triangular_reads_triangle": lambda K, c: K.solve_triangular(c(LOW + 5), c(B_VEC), lower=True),
    "solve_triangular_zero_pivot": lambda K, c: K.solve_triangular(c(np.array([[0.0, 1], [0, 1]])), c(np.ones(2))),
    "lstsq_vec": lambda K, c: K.lstsq(c(TALL[0]), c(rng_b(5))),
    "lstsq_mat": lambda K, c: K.lstsq(c(TALL[0]), c(TALL[1])),
    "lstsq_rank_deficient": lambda K, c: K.lstsq(c(np.ones((4, 3))), c(np.arange(4.0))),
    "lstsq_rcond": lambda K, c: K.lstsq(c(TALL[0]), c(TALL[1]), rcond=0.5),
    "pinv": lambda K, c: K.pinv(c(TALL)),
    "pinv_rcond": lambda K, c: K.pinv(c(TALL), rcond=0.4),
    "matrix_rank": lambda K, c: K.matrix_rank(c(np.stack([SQ[0], np.ones((4, 4))]))),
    "matrix_rank_tol": lambda K, c: K.matrix_rank(c(SQ), tol=0.5),
    "svd_values": lambda K, c: K.svd(c(TALL), compute_uv=False),
    "eigh_values": lambda K, c: K.eigh(c(SPD))[0],
    "qr": lambda K, c: tuple(K.qr(c(TALL))),
    "qr_complete": lambda K, c: tuple(K.qr(c(TALL), mode="complete")),
    "qr_wide": lambda K, c: tuple(K.qr(c(np.swapaxes(TALL, -1, -2)))),
    "lu_factor": lambda K, c: K.lu_factor(c(SQ[0])),
    "norm": lambda K, c: K.linalg.norm(c(SQ[0])),
}


def rng_b(n):
    return np.linspace(-1.0, 2.0, n)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(EXACT))
def test_values_dtypes_and_structure(name, dtype):
    fn = EXACT[name]
    got = fn(ops, lambda a: np.asarray(a, dtype))
    want = fn(keras.ops, lambda a: keras.ops.convert_to_tensor(np.asarray(a, dtype)))
    assert type(got) is type(want) or isinstance(want, tf.Tensor), (type(got), type(want))
    tol = {"float32": (2e-5, 2e-5), "float64": (1e-10, 1e-10)}[dtype]
    assert_same(got, want, *tol, what=f"{name} {dtype}")
    for leaf in got if isinstance(got, tuple) else (got,):
        assert hasattr(leaf, "numpy"), name  # an eager tensor, as Keras' tf.Tensor


def test_qr_is_keras_namedtuple():
    q, r = got = ops.linalg.qr(TALL[0].astype("float32"))
    want = keras.ops.qr(TALL[0].astype("float32"))
    assert type(got).__name__ == type(want).__name__ == "Qr" and got._fields == want._fields
    np.testing.assert_allclose(got.q @ got.r, TALL[0], rtol=1e-5, atol=1e-5)
    assert q is got.q and r is got.r


@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_svd_matches_up_to_signs(full_matrices, dtype):
    x = TALL.astype(dtype)
    got = ops.svd(x, full_matrices=full_matrices)
    want = keras.ops.svd(x, full_matrices=full_matrices)
    assert isinstance(got, tuple) and len(got) == 3
    u, s, vh = (to_numpy(v) for v in got)
    ku, ks, kvh = (to_numpy(v) for v in want)
    assert [v.shape for v in (u, s, vh)] == [v.shape for v in (ku, ks, kvh)]
    assert {v.dtype for v in (u, s, vh)} == {np.dtype(dtype)}
    tol = 1e-5 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(s, ks, rtol=tol, atol=tol)
    k = s.shape[-1]  # the singular vectors of distinct singular values, each up to its sign
    sign = np.sign(np.sum(u[..., :k] * ku[..., :k], axis=-2))
    np.testing.assert_allclose(u[..., :k] * sign[..., None, :], ku[..., :k], rtol=1e-4, atol=tol * 10)
    np.testing.assert_allclose(vh[..., :k, :] * sign[..., :, None], kvh[..., :k, :], rtol=1e-4, atol=tol * 10)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eig_and_eigh_match_up_to_order_and_sign(dtype):
    x = SQ.astype(dtype)
    w, v = ops.eig(x)
    kw, kv = (to_numpy(t) for t in keras.ops.eig(x))
    assert w.dtype == kw.dtype and v.dtype == kv.dtype and w.shape == kw.shape and v.shape == kv.shape
    tol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(np.sort_complex(np.asarray(w).ravel()), np.sort_complex(kw.ravel()), rtol=tol, atol=tol)
    np.testing.assert_allclose(x @ np.asarray(v), np.asarray(v) * np.asarray(w)[..., None, :], rtol=tol, atol=tol)
    w, v = ops.eigh(SPD.astype(dtype))
    kw, kv = (to_numpy(t) for t in keras.ops.eigh(SPD.astype(dtype)))
    assert v.dtype == kv.dtype == np.dtype(dtype)
    np.testing.assert_allclose(w, kw, rtol=tol, atol=tol)
    sign = np.sign(np.sum(np.asarray(v) * kv, axis=-2))
    np.testing.assert_allclose(np.asarray(v) * sign[..., None, :], kv, rtol=tol * 10, atol=tol * 10)


def test_lu_factor_reconstructs_with_keras_pivots():
    x = rng.standard_normal((5, 5)).astype("float32")
    lu, piv = ops.lu_factor(x)
    klu, kpiv = keras.ops.lu_factor(x)
    assert_same((lu, piv), (klu, kpiv), 1e-5, 1e-5)
    low, up = np.tril(lu, -1) + np.eye(5), np.triu(lu)
    np.testing.assert_allclose((low @ up)[np.asarray(piv)], x, rtol=1e-5, atol=1e-5)


BAD = {
    "qr_mode": lambda K: K.qr(np.ones((3, 2), "float32"), mode="r"),
    "qr_rank1": lambda K: K.qr(np.ones(3, "float32")),
    "qr_int": lambda K: K.qr(np.ones((3, 2), "int32")),
    "svd_int": lambda K: K.svd(np.ones((3, 2), "int32")),
    "det_rank1": lambda K: K.det(np.ones(2, "float32")),
    "det_int": lambda K: K.det(np.eye(2, dtype="int32")),
    "inv_singular": lambda K: K.inv(np.ones((2, 2), "float32")),
    "inv_not_square": lambda K: K.inv(np.ones((2, 3), "float32")),
    "solve_singular": lambda K: K.solve(np.zeros((2, 2), "float32"), np.ones(2, "float32")),
    "solve_mixed": lambda K: K.solve(np.eye(2, dtype="float32"), np.ones(2, "float64")),
    "solve_not_square": lambda K: K.solve(np.ones((2, 3), "float32"), np.ones(2, "float32")),
    "solve_rhs": lambda K: K.solve(np.eye(2, dtype="float32"), np.ones((3, 1), "float32")),
    "solve_batch": lambda K: K.solve(np.ones((2, 3, 3), "float32"), np.ones((3, 3), "float32")),
    "cholesky_not_pd": lambda K: K.cholesky(-np.eye(2, dtype="float32")),
    "cholesky_int": lambda K: K.cholesky(np.eye(2, dtype="int32")),
    "eigh_int": lambda K: K.eigh(np.eye(2, dtype="int32")),
    "lu_not_square": lambda K: K.lu_factor(np.ones((2, 3), "float32")),
    "lstsq_rows": lambda K: K.lstsq(np.ones((3, 2), "float32"), np.ones(4, "float32")),
    "lstsq_3d": lambda K: K.lstsq(np.ones((2, 3, 2), "float32"), np.ones((2, 3), "float32")),
    "lstsq_int": lambda K: K.lstsq(np.ones((3, 2), "int32"), np.ones(3, "int32")),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_errors_match_keras(name):
    want, got = assert_same_error(tf, lambda: BAD[name](keras.ops), lambda: BAD[name](ops), name)
    assert "keras.ops." in str(got) or str(want)[:25] in str(got), (name, str(got), str(want))


@pytest.mark.parametrize("call", [lambda t: ops.qr(t), lambda t: ops.linalg.svd(t), lambda t: ops.inv(t),
                                  lambda t: ops.solve(t, t), lambda t: ops.det(t), lambda t: ops.lstsq(t, t)])
def test_symbolic_call_is_refused_naming_the_function(call):
    inp = layers.Input((3, 3))
    with pytest.raises(ArgumentError, match=r"keras\.ops\.\w+ runs on arrays and eager tensors only"):
        call(inp)


def test_gradient_through_a_decomposition_is_an_error_not_zero():
    from flexflow_keras.ops.tape import GradientTape

    x = ops.convert_to_tensor(SPD[0], "float32")
    with GradientTape() as tape:
        tape.watch(x)
        loss = ops.sum(ops.multiply(ops.inv(x), 2.0))
    with pytest.raises(Exception, match=r"keras\.ops\.inv"):
        tape.gradient(loss, x)
