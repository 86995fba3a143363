"""`keras.ops.linalg`: Keras 3's matrix decompositions and solvers, with its names, signatures, result
structures and dtypes (as its TensorFlow backend): `cholesky`, `cholesky_inverse`, `det`, `eig`, `eigh`,
`inv`, `lstsq`, `lu_factor`, `matrix_rank`, `norm`, `pinv`, `qr`, `solve`, `solve_triangular`, `svd`, and the
top-level `logdet` (keras.ops.logdet, not in keras.ops.linalg).

These run on arrays and eager tensors only: each computes in float64 with NumPy (LAPACK) and returns the
input's float dtype (eig: complex64 / complex128, as TensorFlow). A model's graph has no decomposition op
with a gradient here, so a symbolic call is refused naming the function; while a GradientTape records, the
results are marked so that a gradient through them is an error, not a silent zero (tape.note_untracked).
Singular or non-float inputs raise TensorFlow's InvalidArgumentError (a ValueError here; the runner's
``tf.errors.InvalidArgumentError``), Keras' own checks their ValueError / TypeError.

Example:
    >>> q, r = keras.ops.linalg.qr(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "float32"))
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.ops import functional as F
from flexflow_keras.ops.numpy_extra import norm

__all__ = ["cholesky", "cholesky_inverse", "det", "eig", "eigh", "inv", "lstsq", "lu_factor", "matrix_rank",
           "norm", "pinv", "qr", "solve", "solve_triangular", "svd", "logdet"]

Qr = namedtuple("Qr", ["q", "r"])  # tf.linalg.qr's result type, which Keras returns as it is
_TF_FLOATS = {"float16": "half", "float32": "float", "float64": "double"}


def _invalid(message: str):
    from flexflow_keras.tf_convert import invalid

    invalid(message)


def _eager(who: str, *values) -> None:
    if F._symbolic(*values):
        raise ArgumentError(f"keras.ops.{who} runs on arrays and eager tensors only: flexflow_keras has no {who} op "
                            f"with a gradient for a model's graph. Compute it on NumPy arrays (before fit, or in a "
                            f"custom train_step outside the recorded model), or express the layer without it.")


def _array(x) -> np.ndarray:
    """x as Keras converts it: a tensor's own dtype, Python floats float32, ints int32."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "value") and hasattr(x, "assign"):  # a Variable
        return np.asarray(x.value)
    arr = np.asarray(x)
    return arr.astype({"float64": "float32", "int64": "int32"}.get(str(arr.dtype), arr.dtype))


def _floats(who: str, op: str, *values) -> list[np.ndarray]:
    """The values as arrays of one float dtype; TensorFlow's InvalidArgumentError otherwise."""
    _eager(who, *values)
    arrays = [_array(v) for v in values]
    for a in arrays:
        if str(a.dtype) not in _TF_FLOATS:
            _invalid(f"Value for attr 'T' of {a.dtype} is not in the list of allowed values: double, float, half, "
                     f"complex64, complex128 [Op:{op}]. keras.ops.{who} takes float matrices: cast them first "
                     f"(keras.ops.cast(x, 'float32')).")
    if len({str(a.dtype) for a in arrays}) > 1:
        _invalid(f"cannot compute {op} as input #1(zero-based) was expected to be a {_TF_FLOATS[str(arrays[0].dtype)]} "
                 f"tensor but is a {_TF_FLOATS[str(arrays[1].dtype)]} tensor [Op:{op}]. keras.ops.{who} needs a "
                 f"and b of one dtype.")
    return arrays


def _rank2(*arrays) -> None:
    for a in arrays:
        if a.ndim < 2:
            raise ValueError(f"Expected input to have rank >= 2. Received input with shape {a.shape}.")


def _square(*arrays) -> None:
    for a in arrays:
        if a.shape[-1] != a.shape[-2]:
            raise ValueError(f"Expected a square matrix. Received non-square input with shape {a.shape}")


def _done(who: str, inputs, result):
    """`result` (float64 arrays) in the input's dtype, marked for a recording tape."""
    from flexflow_keras.ops import tape

    tape.note_untracked(list(inputs), result, f"keras.ops.{who} (no gradient here)")
    return result


def _cast(a, dtype) -> np.ndarray:
    return np.asarray(a).astype(dtype)


def _mT(a):
    return np.swapaxes(a, -1, -2)


# --- decompositions -------------------------------------------------------------------------------------
def cholesky(x, upper=False):
    """The lower (or with `upper`, upper) Cholesky factor of each positive-definite matrix in x (..., M, M);
    a matrix that is not positive definite is Keras' ValueError."""
    _eager("cholesky", x)
    try:
        (a,) = _floats("cholesky", "Cholesky", x)
    except ValueError as e:
        raise ValueError(f"Cholesky decomposition failed: {e}") from None
    _rank2(a)
    _square(a)
    try:
        low = np.linalg.cholesky(a.astype(np.float64))
    except np.linalg.LinAlgError:
        raise ValueError("Cholesky decomposition failed: the input is not positive definite (the factor had "
                         "NaNs). keras.ops.cholesky needs symmetric positive-definite matrices.") from None
    return _done("cholesky", (a,), _cast(_mT(low) if upper else low, a.dtype))


def cholesky_inverse(x, upper=False):
    """The inverse of A from its Cholesky factor x (lower, or upper with `upper`): ``inv(L L^T)``."""
    (a,) = _floats("cholesky_inverse", "MatrixTriangularSolve", x)
    _rank2(a)
    _square(a)
    eye = np.broadcast_to(np.eye(a.shape[-1]), a.shape)
    inv_chol = _triangular(a.astype(np.float64), eye, lower=not upper)
    out = inv_chol @ _mT(inv_chol) if upper else _mT(inv_chol) @ inv_chol
    return _done("cholesky_inverse", (a,), _cast(out, a.dtype))


def qr(x, mode="reduced"):
    """The QR decomposition of each matrix in x (..., M, N): a ``Qr(q, r)`` namedtuple, q (..., M, K) and
    r (..., K, N) with K = min(M, N) ("reduced"), or q (..., M, M) and r (..., M, N) ("complete")."""
    if mode not in {"reduced", "complete"}:
        raise ValueError(f"`mode` argument value not supported. Expected one of {{'reduced', 'complete'}}. "
                         f"Received: mode={mode}")
    (a,) = _floats("qr", "Qr", x)
    if a.ndim < 2:
        _invalid(f"Input tensor 0 must have rank >= 2, got {a.ndim} [Op:Qr]. keras.ops.qr takes matrices (..., M, N).")
    q, r = np.linalg.qr(a.astype(np.float64), mode=mode)
    return _done("qr", (a,), Qr(_cast(q, a.dtype), _cast(r, a.dtype)))


def svd(x, full_matrices=True, compute_uv=True):
    """The singular value decomposition ``x = u @ diag(s) @ vh``: (u, s, vh), or s alone without
    `compute_uv`; u (..., M, M) and vh (..., N, N) with `full_matrices`, else (..., M, K) and (..., K, N)."""
    (a,) = _floats("svd", "Svd", x)
    _rank2(a)
    wide = a.astype(np.float64)
    if not compute_uv:
        return _done("svd", (a,), _cast(np.linalg.svd(wide, compute_uv=False), a.dtype))
    u, s, vh = np.linalg.svd(wide, full_matrices=bool(full_matrices))
    return _done("svd", (a,), (_cast(u, a.dtype), _cast(s, a.dtype), _cast(vh, a.dtype)))


def eig(x):
    """The eigenvalues (..., M) and eigenvectors (..., M, M) of each square matrix, complex64 for float32
    input and complex128 for float64 (as TensorFlow; the order of the eigenvalues is LAPACK's)."""
    (a,) = _floats("eig", "Eig", x)
    _rank2(a)
    _square(a)
    w, v = np.linalg.eig(a.astype(np.float64))
    ctype = np.complex128 if a.dtype == np.float64 else np.complex64
    return _done("eig", (a,), (w.astype(ctype), v.astype(ctype)))


def eigh(x):
    """The eigenvalues (ascending, (..., M)) and eigenvectors (..., M, M) of each symmetric matrix (its lower
    triangle is read)."""
    (a,) = _floats("eigh", "SelfAdjointEigV2", x)
    _rank2(a)
    _square(a)
    w, v = np.linalg.eigh(a.astype(np.float64))
    return _done("eigh", (a,), (_cast(w, a.dtype), _cast(v, a.dtype)))


def lu_factor(x):
    """The LU decomposition with partial pivoting of each square matrix: (lu, pivots), lu (..., M, M) holding
    L's strict lower part (unit diagonal) and U, and pivots (..., M) int32 with ``x == (L @ U)[pivots]``, as
    Keras' TensorFlow backend returns them (the inverse of tf.linalg.lu's permutation)."""
    (a,) = _floats("lu_factor", "Lu", x)
    _rank2(a)
    try:
        _square(a)
    except ValueError as e:
        raise ValueError(f"LU decomposition failed: {e}. LU decomposition is only supported for square matrices "
                         f"in Tensorflow.") from None
    lu = a.astype(np.float64).copy()
    n = a.shape[-1]
    perm = np.broadcast_to(np.arange(n), a.shape[:-1]).copy()
    flat_lu, flat_perm = lu.reshape(-1, n, n), perm.reshape(-1, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        for m, p in zip(flat_lu, flat_perm, strict=True):
            for k in range(n):
                pivot = k + int(np.argmax(np.abs(m[k:, k])))
                if pivot != k:
                    m[[k, pivot]] = m[[pivot, k]]
                    p[[k, pivot]] = p[[pivot, k]]
                if m[k, k] != 0:
                    m[k + 1:, k] /= m[k, k]
                m[k + 1:, k + 1:] -= np.outer(m[k + 1:, k], m[k, k + 1:])
    inverse = np.argsort(perm, axis=-1).astype(np.int32)
    return _done("lu_factor", (a,), (_cast(lu, a.dtype), inverse))


# --- inverses and determinants -------------------------------------------------------------------------------
def inv(x):
    """The inverse of each square matrix; a singular one is TensorFlow's InvalidArgumentError."""
    (a,) = _floats("inv", "MatrixInverse", x)
    _rank2(a)
    _square(a)
    try:
        out = np.linalg.inv(a.astype(np.float64))
    except np.linalg.LinAlgError:
        _invalid("Input is not invertible. [Op:MatrixInverse] keras.ops.inv needs non-singular matrices; "
                 "keras.ops.pinv gives the pseudo-inverse of a singular one.")
    return _done("inv", (a,), _cast(out, a.dtype))


def det(x):
    """The determinant of each square matrix, shape x.shape[:-2]."""
    (a,) = _floats("det", "MatrixDeterminant", x)
    _rank2(a)
    _square(a)
    return _done("det", (a,), _cast(np.linalg.det(a.astype(np.float64)), a.dtype))


def logdet(x):
    """The log-determinant of each Hermitian positive-definite matrix, through its Cholesky factor (read from
    the lower triangle, as TensorFlow); NaN for a matrix that is not positive definite, as TensorFlow gives."""
    (a,) = _floats("logdet", "Cholesky", x)
    _rank2(a)
    _square(a)
    low = np.tril(a.astype(np.float64))
    sym = low + _mT(np.tril(low, -1))
    flat = sym.reshape(-1, *sym.shape[-2:])
    out = np.empty(len(flat))
    for i, m in enumerate(flat):
        try:
            out[i] = 2.0 * np.sum(np.log(np.diagonal(np.linalg.cholesky(m))))
        except np.linalg.LinAlgError:
            out[i] = np.nan
    return _done("logdet", (a,), _cast(out.reshape(a.shape[:-2]), a.dtype))


def pinv(x, rcond=None):
    """The Moore-Penrose pseudo-inverse (..., N, M) of each matrix; singular values at most `rcond` times the
    largest count as zero (default ``10 * max(M, N) * eps`` of x's dtype, as TensorFlow)."""
    (a,) = _floats("pinv", "Svd", x)
    _rank2(a)
    if rcond is None:
        rcond = 10.0 * max(a.shape[-2:]) * np.finfo(a.dtype).eps
    return _done("pinv", (a,), _cast(np.linalg.pinv(a.astype(np.float64), rcond=float(rcond)), a.dtype))


def matrix_rank(x, tol=None):
    """The number of singular values of each matrix above `tol` (default ``max(s) * max(M, N) * eps`` of x's
    dtype, as TensorFlow), int32 of shape x.shape[:-2]."""
    (a,) = _floats("matrix_rank", "Svd", x)
    _rank2(a)
    s = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    if tol is None:
        tol = np.max(s, axis=-1, keepdims=True, initial=0.0) * max(a.shape[-2:]) * np.finfo(a.dtype).eps
    return _done("matrix_rank", (a,), np.sum(s > tol, axis=-1).astype(np.int32))


# --- solvers ----------------------------------------------------------------------------------------------
def _solve_args(who: str, op: str, a, b) -> tuple[np.ndarray, np.ndarray, bool]:
    """(a, b as a batch of right-hand-side matrices, whether b was a vector) with Keras' and TF's checks."""
    a, b = _floats(who, op, a, b)
    _rank2(a)
    _square(a)
    if b.ndim < 1:
        raise ValueError(f"Expected input to have rank >= 1. Received scalar input {b}.")
    if a.ndim == b.ndim and a.shape[-2] != b.shape[-2]:
        raise ValueError(f"Incompatible shapes between `a` and `b`. Expected `a.shape[-2] == b.shape[-2]`. "
                         f"Received: a.shape={a.shape}, b.shape={b.shape}")
    if a.ndim == b.ndim - 1 and a.shape[-1] != b.shape[-1]:
        raise ValueError(f"Incompatible shapes between `a` and `b`. Expected `a.shape[-1] == b.shape[-1]`. "
                         f"Received: a.shape={a.shape}, b.shape={b.shape}")
    vector = b.ndim == a.ndim - 1
    rhs = b[..., None] if vector else b
    if rhs.shape[:-2] != a.shape[:-2] or rhs.shape[-2] != a.shape[-1]:
        _invalid(f"All input tensors must have the same rank and batch shape, and the matrix and rhs must be "
                 f"compatible: received a.shape={a.shape}, b.shape={b.shape} [Op:{op}]. keras.ops.{who} takes b of "
                 f"shape a.shape[:-1] or a.shape[:-1] + (N,).")
    return a, rhs, vector


def solve(a, b):
    """x with ``a @ x = b`` for each square matrix of a (..., M, M) and b (..., M) or (..., M, N); a singular
    matrix is TensorFlow's InvalidArgumentError."""
    a_, rhs, vector = _solve_args("solve", "MatrixSolve", a, b)
    try:
        out = np.linalg.solve(a_.astype(np.float64), rhs.astype(np.float64))
    except np.linalg.LinAlgError:
        _invalid("Input matrix is not invertible. [Op:MatrixSolve] keras.ops.solve needs non-singular matrices; "
                 "keras.ops.lstsq solves a singular system in the least-squares sense.")
    return _done("solve", (a_, rhs), _cast(out[..., 0] if vector else out, a_.dtype))


def _triangular(a: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """Substitution on a's lower or upper triangle (the other is not read); a zero pivot gives inf / NaN, as
    TensorFlow's triangular solve, not an error."""
    n = a.shape[-1]
    x = np.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:])
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in rows:
            done = slice(0, i) if lower else slice(i + 1, n)
            acc = np.einsum("...k,...kj->...j", a[..., i, done], x[..., done, :])
            x[..., i, :] = (b[..., i, :] - acc) / a[..., i, i, None]
    return x


def solve_triangular(a, b, lower=False):
    """x with ``a @ x = b`` for triangular a (its upper triangle, or lower with `lower`); b as in `solve`."""
    a_, rhs, vector = _solve_args("solve_triangular", "MatrixTriangularSolve", a, b)
    out = _triangular(a_.astype(np.float64), rhs.astype(np.float64), bool(lower))
    return _done("solve_triangular", (a_, rhs), _cast(out[..., 0] if vector else out, a_.dtype))


def lstsq(a, b, rcond=None):
    """The least-squares (minimum-norm) solution x (N,) or (N, K) of ``a @ x = b`` for a (M, N) and b (M,) or
    (M, K), through the SVD; singular values below ``rcond * s[0]`` (default ``eps * max(M, N)``) are zero.
    Only x is returned, as Keras."""
    _eager("lstsq", a, b)
    a_, b_ = _array(a), _array(b)
    if a_.shape[:1] != b_.shape[:1]:
        raise ValueError("Leading dimensions of input arrays must match")
    vector = b_.ndim == 1
    if a_.ndim != 2:
        raise TypeError(f"{a_.ndim}-dimensional array given. Array must be two-dimensional")
    rhs = b_[:, None] if vector else b_
    if rhs.ndim != 2:
        raise TypeError(f"{b_.ndim}-dimensional array given. Array must be one or two-dimensional")
    if a_.dtype.kind != "f":
        raise ValueError(f"data type {a_.dtype.type} not inexact")
    m, n = a_.shape
    eps = np.finfo(a_.dtype).eps
    cut = eps * max(n, m) if rcond is None else (eps if rcond < 0 else rcond)
    u, s, vh = np.linalg.svd(a_.astype(np.float64), full_matrices=False)
    keep = s >= cut * s[0] if s.size else s.astype(bool)
    s_inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)[:, None]
    x = vh.T @ (s_inv * (u.T @ rhs.astype(np.float64)))
    return _done("lstsq", (a_, b_), _cast(x[:, 0] if vector else x, a_.dtype))
