"""TensorFlow's `tf.linalg` functions that tf.keras scripts call, under `python -m flexflow_keras`
(tf_compat.py's `mapped_call` looks here): `inv`, `det`, `diag`, `diag_part`, `set_diag`, `trace`, `matvec`,
`matrix_transpose` and `adjoint`, each over the last two dims of a batch of matrices, with TensorFlow's
argument names.

`matrix_transpose` / `adjoint` swap the last two dims (conjugating a complex value: an array, or a model's
(real, imag) pair from tf_signal_graph). `diag`, `diag_part`, `trace` and `matvec` are composed from keras.ops (eager, symbolic in a model,
differentiable). keras.ops here has no matrix inverse or determinant, so `inv` and `det` are eager: the value
is NumPy's (LAPACK) and, while a GradientTape records, the result carries TensorFlow's first derivative
through keras.ops (``d inv(A) = -inv(A) dA inv(A)``, ``d det(A) = det(A) tr(inv(A) dA)``, the cofactors for
a singular matrix), written as ``value + linear term in (A - stop_gradient(A))``, which adds zero to the
value. Second derivatives through them are not available. A symbolic call, a non-float input and a
TensorFlow-only argument value (`diag`'s k, num_rows, ...) are refused naming the call.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.tf_convert import ops as _ops
from flexflow_keras.tf_convert import refuse
from flexflow_keras.tf_convert import tensor as _tensor


def _refuse(call: str, why: str):
    refuse(call, why, "Run the script with TensorFlow itself for that.")


def _matrices(call: str, op: str, x) -> np.ndarray:
    """x's values as a batch of square float matrices (TensorFlow's checks and words)."""
    from flexflow_keras.tf_compat import InvalidArgumentError

    if isinstance(x, KerasTensor):
        _refuse(call, "runs on arrays only here (keras.ops has no matrix inverse or determinant for a model's "
                      "graph); compute it before fit or outside the model.")
    a = np.asarray(_tensor(x))
    if a.dtype.kind != "f":
        raise InvalidArgumentError(f"Value for attr 'T' of {a.dtype} is not in the list of allowed values: double, "
                                   f"float, half [Op:{op}]. Cast the matrix first: tf.cast(x, tf.float32).")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise InvalidArgumentError(f"Input must be a batch of square matrices (shape [..., M, M]), received shape "
                                   f"{list(a.shape)} [Op:{op}].")
    return a


def _recording() -> bool:
    from flexflow_keras.ops import tape

    return tape.recording()


def _delta(x):
    """``x - stop_gradient(x)``: zero, whose gradient is the identity (the tape sees x)."""
    ops = _ops()
    return ops.subtract(x, ops.stop_gradient(x))


def _transpose(x):
    nd = np.ndim(x)
    return _ops().transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def inv(input, adjoint=False, name=None):  # noqa: A002 (TensorFlow's argument name)
    """`tf.linalg.inv(input, adjoint=False)`: the inverse of each matrix (of its transpose with `adjoint`);
    a singular matrix is TensorFlow's InvalidArgumentError "Input is not invertible"."""
    from flexflow_keras.ops.eager_tensor import eager
    from flexflow_keras.tf_compat import InvalidArgumentError

    a = _matrices("tf.linalg.inv", "MatrixInverse", input)
    target = np.swapaxes(a, -1, -2) if adjoint else a
    try:
        value = eager(np.linalg.inv(target.astype(np.float64)).astype(a.dtype))
    except np.linalg.LinAlgError:
        raise InvalidArgumentError("Input is not invertible. [Op:MatrixInverse] tf.linalg.inv needs "
                                   "non-singular matrices; tf.linalg.pinv gives the pseudo-inverse of a singular one.") from None
    if not _recording():
        return value
    ops = _ops()
    change = _delta(input)
    change = _transpose(change) if adjoint else change
    return ops.subtract(value, ops.matmul(ops.matmul(value, change), value))


def _cofactors(a: np.ndarray) -> np.ndarray:
    """The cofactor matrix of each (n, n) matrix: det(A) inv(A).T where A is invertible, and still defined
    where it is not (the gradient of det at a singular matrix)."""
    n = a.shape[-1]
    out = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=-2), j, axis=-1)
            out[..., i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return out


def det(input, name=None):  # noqa: A002 (TensorFlow's argument name)
    """`tf.linalg.det(input)`: the determinant of each matrix."""
    from flexflow_keras.ops.eager_tensor import eager

    a = _matrices("tf.linalg.det", "MatrixDeterminant", input)
    wide = a.astype(np.float64)
    value = eager(np.asarray(np.linalg.det(wide)).astype(a.dtype))
    if not _recording():
        return value
    ops = _ops()
    singular = np.linalg.matrix_rank(wide) < a.shape[-1] if a.size else np.zeros(a.shape[:-2], bool)
    grads = np.where(np.asarray(singular)[..., None, None], _cofactors(wide),
                     np.linalg.det(wide)[..., None, None] * np.swapaxes(np.linalg.pinv(wide), -1, -2))
    return ops.add(value, ops.sum(ops.multiply(grads.astype(a.dtype), _delta(input)), axis=(-2, -1)))


def _defaults(call: str, given: dict, defaults: dict) -> None:
    for arg, default in defaults.items():
        if given[arg] != default:
            _refuse(call, f"is mapped for {arg}={default!r} only (the main diagonal of the whole matrix), received "
                          f"{arg}={given[arg]!r}.")


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    """`tf.linalg.diag(diagonal)`: square matrices with `diagonal`'s last dim on their diagonal, zeros
    elsewhere (shape ``diagonal.shape + [n]``). Only the main diagonal (k=0) is mapped."""
    _defaults("tf.linalg.diag", {"k": k, "num_rows": num_rows, "num_cols": num_cols, "padding_value": padding_value},
              {"k": 0, "num_rows": -1, "num_cols": -1, "padding_value": 0})
    ops = _ops()
    diagonal = _tensor(diagonal)
    dtype = str(diagonal.dtype)
    n = int(diagonal.shape[-1] if isinstance(diagonal, KerasTensor) else np.shape(diagonal)[-1])
    eye = np.eye(n, dtype=bool)
    return ops.where(eye, ops.expand_dims(diagonal, -1), np.zeros((), dtype))


def diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT"):  # noqa: A002 (TF's names)
    """`tf.linalg.diag_part(input)`: the main diagonal of each matrix (its last two dims), of length
    min(rows, cols). Only k=0 is mapped."""
    _defaults("tf.linalg.diag_part", {"k": k, "padding_value": padding_value}, {"k": 0, "padding_value": 0})
    return _ops().diagonal(_tensor(input), axis1=-2, axis2=-1)


def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):  # noqa: A002 (TF's names)
    """`tf.linalg.set_diag(input, diagonal)`: each matrix of `input` (its last two dims) with its main
    diagonal replaced by `diagonal` (shape ``input.shape[:-2] + [min(rows, cols)]``). Only k=0 is mapped."""
    _defaults("tf.linalg.set_diag", {"k": k}, {"k": 0})
    ops = _ops()
    x, d = _tensor(input), _tensor(diagonal)
    if len(x.shape) < 2:
        from flexflow_keras.tf_compat import InvalidArgumentError

        raise InvalidArgumentError(f"tf.linalg.set_diag: input must be at least 2-dim (a batch of matrices), "
                                   f"received shape {tuple(x.shape)}; give a vector's values as tf.linalg.diag(v).")
    rows, cols = (int(s) for s in x.shape[-2:])
    n = min(rows, cols)
    if tuple(d.shape[-1:]) != (n,) or len(d.shape) != len(x.shape) - 1:
        from flexflow_keras.tf_compat import InvalidArgumentError

        raise InvalidArgumentError(f"tf.linalg.set_diag: the diagonal must have shape input.shape[:-2] + [{n}] "
                                   f"(min(rows, cols) of the {rows}x{cols} matrices), received diagonal shape "
                                   f"{tuple(d.shape)} for input shape {tuple(x.shape)}.")
    eye = np.eye(rows, cols, dtype=bool)
    placed = ops.expand_dims(d, -1 if rows <= cols else -2)  # diagonal[i] along row i (or column i)
    return ops.where(eye, ops.cast(placed, str(x.dtype)), x)


def trace(x, name=None):
    """`tf.linalg.trace(x)`: the sum of each matrix's main diagonal, in x's dtype."""
    x = _tensor(x)
    return _ops().sum(_ops().diagonal(x, axis1=-2, axis2=-1), axis=-1)


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False, name=None):
    """`tf.linalg.matvec(a, b, transpose_a=False, adjoint_a=False)`: each matrix of `a` times the vector in
    the last dim of `b` (the sparsity flags are TensorFlow's hints and change nothing)."""
    ops = _ops()
    a, b = _tensor(a), _tensor(b)
    if transpose_a or adjoint_a:  # real matrices: the adjoint is the transpose
        a = _transpose(a)
    return ops.squeeze(ops.matmul(a, ops.expand_dims(b, -1)), -1)


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """`tf.linalg.matrix_transpose(a, conjugate=False)`: each matrix of `a` (its last two dims) transposed,
    complex entries conjugated with `conjugate`; any dtype, eager or a model's symbolic tensor."""
    from flexflow_keras import tf_signal_graph

    if isinstance(a, tf_signal_graph.SymbolicComplex) or (
            isinstance(a, KerasTensor) and str(a.dtype).startswith("complex")):
        pair = tf_signal_graph.parts(a, "linalg.matrix_transpose")
        im = _transpose(pair.im)
        return tf_signal_graph.SymbolicComplex(_transpose(pair.re), _ops().negative(im) if conjugate else im)
    if not isinstance(a, KerasTensor):
        value = np.asarray(_tensor(a))
        if value.dtype.kind == "c":
            if value.ndim < 2:
                _rank_error(value)
            from flexflow_keras.data.dataset import as_tensor

            swapped = np.swapaxes(value, -1, -2)
            return as_tensor(np.conj(swapped) if conjugate else swapped)
        a = _tensor(a)
    if len(a.shape) < 2:
        _rank_error(a)
    return _transpose(a)


def _rank_error(a):
    raise ValueError(f"Argument `a` should be a (batch) matrix with rank >= 2.  Received `a` = {a} with shape: "
                     f"{tuple(a.shape)} (tf.linalg.matrix_transpose swaps the last two dims; use "
                     f"tf.transpose for a vector).")


def adjoint(matrix, name=None):
    """`tf.linalg.adjoint(matrix)`: the conjugate transpose of each matrix (the transpose of a real one)."""
    return matrix_transpose(matrix, conjugate=True)


CALLS = {f"tf.linalg.{fn.__name__}": fn
         for fn in (inv, det, diag, diag_part, set_diag, trace, matvec, matrix_transpose, adjoint)}
