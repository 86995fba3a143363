"""TensorFlow's matrix decompositions and solvers under `python -m flexflow_keras` (tf_compat.py's
`mapped_call` looks here; `inv`, `det`, `diag`, `trace` and `matvec` are in tf_linalg_ops.py): `qr`, `svd`,
`eig`, `eigvals`, `eigh`, `eigvalsh`, `cholesky`, `solve`, `triangular_solve`, `lstsq`, `pinv`, `logdet`,
`slogdet` and `matrix_rank`, with TensorFlow's argument names, defaults and results, computed by
keras.ops.linalg (ops/linalg.py: NumPy's LAPACK in float64, cast back).

TensorFlow's conventions kept here: `svd` returns ``(s, u, v)`` with v, not its transpose, and reduced
matrices by default; `qr` a ``Qr(q, r)``; `slogdet` a ``LogMatrixDeterminant(sign, log_abs_determinant)``;
`solve` and `triangular_solve` (lower=True by default) want a right-hand side of the matrix's rank; a
matrix `cholesky` cannot factor gives NaNs rather than an error, as TensorFlow's kernel; `lstsq` solves the
regularized normal equations through a Cholesky factor when `fast` (NaN for a rank-deficient matrix, as
TensorFlow), the minimum-norm solution otherwise.

Eager only, as keras.ops.linalg: a symbolic input is a RawTensorFlowError naming the call. While a
GradientTape records, `solve`, `triangular_solve`, `cholesky`, `logdet` and `slogdet` carry TensorFlow's
first derivative, written as ``value + linear term in (x - stop_gradient(x))`` (tf_linalg_ops.py's way:
``dX = A^-1 (dB - dA X)``; Cholesky's ``dL = L Phi(L^-1 sym(dA) L^-T)``; ``d log|det A| = tr(A^-1 dA)``);
the others' results are marked, so a gradient through them is an error rather than a silent zero.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from flexflow_keras.ops import linalg as L
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.tf_convert import invalid
from flexflow_keras.tf_convert import ops as _ops
from flexflow_keras.tf_linalg_ops import _delta, _recording, _refuse, _transpose

LogMatrixDeterminant = namedtuple("LogMatrixDeterminant", ["sign", "log_abs_determinant"])


def _eager_only(call: str, *values) -> None:
    if any(isinstance(v, KerasTensor) for v in values):
        _refuse(call, "runs on arrays only here (keras.ops.linalg has no op for a model's graph); compute it "
                      "before fit or outside the model.")


def _tensor(x):
    from flexflow_keras.ops.eager_tensor import eager

    return eager(np.array(x))  # a fresh array: not the marked result of a keras.ops.linalg call


def _untracked(call: str, inputs, result):
    """`result` (a tensor, tuple or namedtuple of keras.ops.linalg's arrays) as tensors, marked for a
    recording tape: a gradient through them is an error naming `call`."""
    from flexflow_keras.ops import tape

    if isinstance(result, tuple):
        out = [_tensor(v) for v in result]
        result = type(result)(*out) if hasattr(result, "_fields") else tuple(out)
    else:
        result = _tensor(result)
    tape.note_untracked([L._array(v) for v in inputs], result, f"{call} (no gradient here)")
    return result


def _float_matrix(call: str, op: str, *values) -> list[np.ndarray]:
    _eager_only(call, *values)
    arrays = L._floats(call.removeprefix("tf."), op, *values)
    if arrays[0].ndim < 2:
        invalid(f"Input tensor 0 must have rank >= 2, got {arrays[0].ndim} [Op:{op}]. {call} takes matrices "
                f"(..., M, N).")
    return arrays


def _square(call: str, op: str, a: np.ndarray) -> None:
    if a.shape[-1] != a.shape[-2]:
        invalid(f"Input matrix must be square. [Op:{op}] {call} received shape {list(a.shape)}.")


# --- decompositions (no gradient here) --------------------------------------------------------------------
def qr(input, full_matrices=False, name=None):  # noqa: A002 (TensorFlow's argument name)
    """`tf.linalg.qr(input, full_matrices=False)`: ``Qr(q, r)`` of each matrix."""
    _float_matrix("tf.linalg.qr", "Qr", input)
    return _untracked("tf.linalg.qr", [input], L.qr(input, mode="complete" if full_matrices else "reduced"))


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """`tf.linalg.svd(tensor, full_matrices=False, compute_uv=True)`: ``(s, u, v)`` with
    ``tensor = u @ diag(s) @ transpose(v)``, or s alone without `compute_uv`."""
    _float_matrix("tf.linalg.svd", "Svd", tensor)
    if not compute_uv:
        return _untracked("tf.linalg.svd", [tensor], L.svd(tensor, compute_uv=False))
    u, s, vh = L.svd(tensor, full_matrices=bool(full_matrices))
    return _untracked("tf.linalg.svd", [tensor], (s, u, np.swapaxes(vh, -1, -2)))


def eigh(tensor, name=None):
    """`tf.linalg.eigh(tensor)`: (eigenvalues ascending, eigenvectors) of each self-adjoint matrix."""
    (a,) = _float_matrix("tf.linalg.eigh", "SelfAdjointEigV2", tensor)
    _square("tf.linalg.eigh", "SelfAdjointEigV2", a)
    return _untracked("tf.linalg.eigh", [tensor], tuple(L.eigh(tensor)))


def eigvalsh(tensor, name=None):
    """`tf.linalg.eigvalsh(tensor)`: the eigenvalues of each self-adjoint matrix, ascending."""
    return eigh(tensor)[0]


def eig(tensor, name=None):
    """`tf.linalg.eig(tensor)`: (eigenvalues, eigenvectors), complex64 (complex128 for float64 input)."""
    (a,) = _float_matrix("tf.linalg.eig", "Eig", tensor)
    _square("tf.linalg.eig", "Eig", a)
    return _untracked("tf.linalg.eig", [tensor], tuple(L.eig(tensor)))


def eigvals(tensor, name=None):
    """`tf.linalg.eigvals(tensor)`: the (complex) eigenvalues of each square matrix."""
    return eig(tensor)[0]


def pinv(a, rcond=None, validate_args=False, name=None):
    """`tf.linalg.pinv(a, rcond=None)`: the Moore-Penrose pseudo-inverse (default rcond ``10 * max(M, N) *
    eps``)."""
    _float_matrix("tf.linalg.pinv", "Svd", a)
    return _untracked("tf.linalg.pinv", [a], L.pinv(a, rcond=rcond))


def matrix_rank(a, tol=None, validate_args=False, name=None):
    """`tf.linalg.matrix_rank(a, tol=None)`: the number of singular values above `tol`, int32."""
    _float_matrix("tf.linalg.matrix_rank", "Svd", a)
    return _tensor(L.matrix_rank(a, tol=tol))


def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """`tf.linalg.lstsq(matrix, rhs, l2_regularizer=0.0, fast=True)`: x minimizing ``|matrix @ x - rhs|^2 +
    l2 |x|^2`` for matrix (..., M, N) and rhs (..., M, K): the normal equations through a Cholesky factor when
    `fast`, the minimum-norm solution (l2_regularizer 0 only) otherwise."""
    a, b = _float_matrix("tf.linalg.lstsq", "MatrixSolveLs", matrix, rhs)
    if b.ndim != a.ndim or a.shape[:-2] != b.shape[:-2] or a.shape[-2] != b.shape[-2]:
        invalid(f"tf.linalg.lstsq: matrix and rhs must have the same batch shape and rows, received "
                f"{list(a.shape)} and {list(b.shape)} [Op:MatrixSolveLs].")
    l2 = float(np.asarray(l2_regularizer))
    wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
    m, n = a.shape[-2:]
    if not fast:
        if l2 != 0.0:
            raise NotImplementedError("tf.linalg.lstsq: only l2_regularizer=0 is supported when fast=False, as in "
                                      "TensorFlow; use fast=True for a regularized solve.")
        out = np.linalg.pinv(wide_a) @ wide_b
    else:
        at = np.swapaxes(wide_a, -1, -2)
        gram = at @ wide_a if m >= n else wide_a @ at
        gram = gram + l2 * np.eye(gram.shape[-1])
        try:
            low = np.linalg.cholesky(gram)
            solved = np.linalg.solve(np.swapaxes(low, -1, -2), np.linalg.solve(low, at @ wide_b if m >= n else wide_b))
        except np.linalg.LinAlgError:  # a rank-deficient matrix: TensorFlow's Cholesky gives NaNs
            solved = np.full(gram.shape[:-1] + (b.shape[-1],), np.nan)
        out = solved if m >= n else at @ solved
    return _untracked("tf.linalg.lstsq", [matrix, rhs], out.astype(a.dtype))


# --- with TensorFlow's first derivative -----------------------------------------------------------------------
def _sym(x):
    ops = _ops()
    return ops.multiply(ops.add(x, _transpose(x)), 0.5)


def cholesky(input, name=None):  # noqa: A002 (TensorFlow's argument name)
    """`tf.linalg.cholesky(input)`: the lower Cholesky factor of each self-adjoint positive-definite matrix
    (its lower triangle is read); NaNs where a matrix is not positive definite."""
    (a,) = _float_matrix("tf.linalg.cholesky", "Cholesky", input)
    _square("tf.linalg.cholesky", "Cholesky", a)
    wide = np.tril(a.astype(np.float64))
    wide = wide + np.swapaxes(np.tril(wide, -1), -1, -2)
    flat = wide.reshape(-1, *wide.shape[-2:])
    low = np.empty_like(flat)
    for i, m in enumerate(flat):
        try:
            low[i] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            low[i] = np.nan
    low = low.reshape(wide.shape)
    value = _tensor(low.astype(a.dtype))
    if not _recording():
        return value
    ops = _ops()
    with np.errstate(all="ignore"):
        low_inv = np.linalg.inv(low) if low.size else low
    n = a.shape[-1]
    phi = (np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)).astype(a.dtype)
    inner = ops.matmul(ops.matmul(low_inv.astype(a.dtype), _sym(_delta(input))),
                       np.swapaxes(low_inv, -1, -2).astype(a.dtype))
    return ops.add(value, ops.matmul(low.astype(a.dtype), ops.multiply(inner, phi)))


def _rhs_check(call: str, op: str, a: np.ndarray, b: np.ndarray) -> None:
    if b.ndim != a.ndim:
        invalid(f"All input tensors must have the same rank. [Op:{op}] {call} takes rhs of shape (..., M, K) for a "
                f"matrix (..., M, M): received {list(a.shape)} and {list(b.shape)}; for a vector use rhs[..., None].")
    if b.shape[-2] != a.shape[-1]:
        invalid(f"Incompatible shapes: the matrix has {a.shape[-1]} rows but rhs has {b.shape[-2]} [Op:{op}] "
                f"({call} received {list(a.shape)} and {list(b.shape)}).")


def _solved(value: np.ndarray, inverse: np.ndarray, matrix, rhs, adjoint: bool, mask=None):
    """``X + A^-1 (dB - dA X)`` (A transposed with `adjoint`, dA masked to a triangle), whose value is X."""
    tensor = _tensor(value)
    if not _recording():
        return tensor
    ops = _ops()
    d_a = _delta(matrix)
    d_a = ops.multiply(d_a, mask) if mask is not None else d_a
    d_a = _transpose(d_a) if adjoint else d_a
    change = ops.subtract(_delta(rhs), ops.matmul(d_a, value))
    return ops.add(tensor, ops.matmul(inverse.astype(value.dtype), change))


def solve(matrix, rhs, adjoint=False, name=None):
    """`tf.linalg.solve(matrix, rhs, adjoint=False)`: X with ``matrix @ X = rhs`` (``matrix^T`` with `adjoint`)."""
    a, b = _float_matrix("tf.linalg.solve", "MatrixSolve", matrix, rhs)
    _square("tf.linalg.solve", "MatrixSolve", a)
    _rhs_check("tf.linalg.solve", "MatrixSolve", a, b)
    wide = a.astype(np.float64)
    wide = np.swapaxes(wide, -1, -2) if adjoint else wide
    try:
        inverse = np.linalg.inv(wide)
    except np.linalg.LinAlgError:
        invalid("Input matrix is not invertible. [Op:MatrixSolve] tf.linalg.solve needs non-singular matrices; "
                "tf.linalg.lstsq solves a singular system in the least-squares sense.")
    value = np.linalg.solve(wide, b.astype(np.float64)).astype(a.dtype)
    return _solved(value, inverse, matrix, rhs, bool(adjoint))


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """`tf.linalg.triangular_solve(matrix, rhs, lower=True, adjoint=False)`: X with ``T @ X = rhs`` for T the
    lower (or upper) triangle of matrix (``T^T`` with `adjoint`); a zero pivot gives inf / NaN."""
    a, b = _float_matrix("tf.linalg.triangular_solve", "MatrixTriangularSolve", matrix, rhs)
    _square("tf.linalg.triangular_solve", "MatrixTriangularSolve", a)
    _rhs_check("tf.linalg.triangular_solve", "MatrixTriangularSolve", a, b)
    n = a.shape[-1]
    mask = np.tril(np.ones((n, n))) if lower else np.triu(np.ones((n, n)))
    tri = a.astype(np.float64) * mask
    tri = np.swapaxes(tri, -1, -2) if adjoint else tri
    value = L._triangular(tri, b.astype(np.float64), bool(lower) != bool(adjoint)).astype(a.dtype)
    if not _recording():
        return _tensor(value)
    with np.errstate(all="ignore"):
        inverse = np.linalg.inv(tri)
    return _solved(value, inverse, matrix, rhs, bool(adjoint), mask.astype(a.dtype))


def _log_det_term(value, input, inverse_t: np.ndarray, symmetric: bool):  # noqa: A002 (TensorFlow's name)
    """``value + tr(A^-1 dA)`` (dA symmetrized for a self-adjoint matrix's logdet)."""
    if not _recording():
        return value
    ops = _ops()
    change = _sym(_delta(input)) if symmetric else _delta(input)
    return ops.add(value, ops.sum(ops.multiply(inverse_t.astype(np.asarray(value).dtype), change), axis=(-2, -1)))


def logdet(matrix, name=None):
    """`tf.linalg.logdet(matrix)`: log(det(matrix)) of each self-adjoint positive-definite matrix, through
    its Cholesky factor (NaN for a matrix that is not positive definite)."""
    (a,) = _float_matrix("tf.linalg.logdet", "Cholesky", matrix)
    _square("tf.linalg.logdet", "Cholesky", a)
    value = _tensor(L.logdet(a.copy()))
    if not _recording():
        return value
    with np.errstate(all="ignore"):
        inverse = np.linalg.pinv(a.astype(np.float64))
    return _log_det_term(value, matrix, np.swapaxes(inverse, -1, -2), True)


def slogdet(input, name=None):  # noqa: A002 (TensorFlow's argument name)
    """`tf.linalg.slogdet(input)`: ``LogMatrixDeterminant(sign, log_abs_determinant)`` of each square matrix
    (sign 0 and -inf for a singular one)."""
    (a,) = _float_matrix("tf.linalg.slogdet", "LogMatrixDeterminant", input)
    _square("tf.linalg.slogdet", "LogMatrixDeterminant", a)
    sign, logabs = np.linalg.slogdet(a.astype(np.float64))
    value = _tensor(np.asarray(logabs).astype(a.dtype))
    if _recording():
        with np.errstate(all="ignore"):
            inverse = np.linalg.pinv(a.astype(np.float64))
        value = _log_det_term(value, input, np.swapaxes(inverse, -1, -2), False)
    return LogMatrixDeterminant(_tensor(np.asarray(sign).astype(a.dtype)), value)


CALLS = {f"tf.linalg.{fn.__name__}": fn for fn in (
    qr, svd, eigh, eigvalsh, eig, eigvals, pinv, matrix_rank, lstsq, cholesky, solve, triangular_solve, logdet,
    slogdet)}
