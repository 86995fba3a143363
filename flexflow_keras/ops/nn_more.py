"""Keras 3's `keras.ops` neural-network functions beyond `functional`'s: the shrink and sparse activations
(hard_shrink, soft_shrink, tanh_shrink, sparse_plus, squareplus, threshold, sparse_sigmoid: element-wise
activation kernels), glu and sparsemax (composed), and `rms_normalization` / `layer_normalization`.

`layer_normalization` runs the fused `LayerNormOp` when it can (trailing per-sample axes, gamma and beta of
the normalised shape or None) and composes mean, variance and rsqrt otherwise; `rms_normalization` always
composes ``x * rsqrt(mean(x^2) + epsilon) * scale``. Both compute as Keras does (``x * inv + (-mean * inv +
beta)`` with ``inv = rsqrt(var + epsilon) * gamma``) and default epsilon to `backend.epsilon()` (1e-7).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import functional as F
from flexflow_keras.ops import numpy_api as N
from flexflow_keras.ops import numpy_extra as X
from flexflow_keras.ops.dtype_rules import dtype_of, operands
from flexflow_keras.ops.graph import KerasTensor, Variable
from flexflow_keras.ops.numpy_arrays import moveaxis
from kernels.reduce import normalize_axes

__all__ = ["glu", "hard_shrink", "soft_shrink", "tanh_shrink", "sparse_plus", "squareplus", "threshold",
           "sparse_sigmoid", "sparsemax", "rms_normalization", "layer_normalization"]


def _float(x):
    return operands(x, floating=True)[2][0]


def _activation(name: str, x, **params):
    return F.activation_fn(_float(x), name, **params)


def hard_shrink(x, threshold=0.5):
    """x where |x| > threshold, else 0."""
    return _activation("hard_shrink", x, threshold=float(threshold))


def soft_shrink(x, threshold=0.5):
    """x - threshold above it, x + threshold below -threshold, 0 between."""
    return _activation("soft_shrink", x, threshold=float(threshold))


def tanh_shrink(x):
    """``x - tanh(x)``."""
    return _activation("tanh_shrink", x)


def sparse_plus(x):
    """0 for x <= -1, ``(x + 1)^2 / 4`` on (-1, 1), x from 1."""
    return _activation("sparse_plus", x)


def squareplus(x, b=4):
    """``(x + sqrt(x^2 + b)) / 2``."""
    return _activation("squareplus", x, b=float(b))


def threshold(x, threshold, default_value):
    """x where x > threshold, else `default_value`."""
    return _activation("threshold", x, threshold=float(threshold), default_value=float(default_value))


def sparse_sigmoid(x):
    """0 for x <= -1, ``(x + 1) / 2`` on (-1, 1), 1 from 1."""
    return _activation("sparse_sigmoid", x)


def glu(x, axis=-1):
    """The gated linear unit: ``a * sigmoid(b)`` for the two halves a, b of x along `axis`."""
    x = _float(x)
    size = N.shape(x)[axis]
    if not isinstance(size, int) or size % 2:
        raise ShapeError(f"ops.glu splits axis {axis} in two halves; it needs an even size, received shape "
                         f"{tuple(N.shape(x))}.")
    a, b = N.split(x, 2, axis=axis)
    return F.multiply(a, F.sigmoid(b))


def sparsemax(x, axis=-1):
    """The Euclidean projection of x onto the simplex along `axis` (Martins & Astudillo, 2016): like softmax,
    but exactly 0 below a threshold."""
    x = _float(x)
    nd = F._ndim(x)
    ax = normalize_axes(axis, nd)[0]
    if ax != nd - 1:
        return moveaxis(sparsemax(moveaxis(x, ax, -1), -1), -1, ax)
    n = N.shape(x)[-1]
    z = N.top_k(x, n)[0]  # descending
    ks = np.arange(1, n + 1, dtype=dtype_of(x))
    support = F.cast(F.greater(F.add(F.multiply(z, ks), 1.0), X.cumsum(z, axis=nd - 1)), dtype_of(x))
    k = F.sum(support, axis=-1, keepdims=True)
    tau = F.divide(F.subtract(F.sum(F.multiply(support, z), axis=-1, keepdims=True), 1.0), k)
    return F.relu(F.subtract(x, tau))


# --- normalisation ---------------------------------------------------------------------------------------------
def _norm_setup(who: str, x, axis, epsilon):
    """(x in at least float32, the sorted axes, epsilon, the per-axis broadcast shape)."""
    from flexflow_keras import backend

    x = _float(x)
    nd = F._ndim(x)
    try:
        axes = normalize_axes(axis, nd)
    except ValueError as e:
        raise ShapeError(f"ops.{who}: {e}") from None
    if F._symbolic(x) and 0 in axes:
        raise ShapeError(f"ops.{who} cannot normalise over axis 0, the batch dim of the symbolic tensor "
                         f"{tuple(x.shape)}; give the feature axes (e.g. -1).")
    eps = float(backend.epsilon() if epsilon is None else epsilon)
    shape = N.shape(x)
    return x, axes, eps, tuple(shape[d] if d in axes else 1 for d in range(nd))


def _param(v, x, axes, bshape):
    """gamma / beta / scale as a tensor of x's dtype, reshaped to broadcast over the normalised axes (Keras
    reshapes it unless it already has x's rank or the axis is just the last one)."""
    sym = F._symbolic(x)
    t = F._tensor(v, sym)
    if dtype_of(t) != dtype_of(x):
        t = F.cast(t, dtype_of(x))
    nd = F._ndim(x)
    if F._ndim(t) != nd and axes != (nd - 1,):
        t = N.reshape(t, bshape)
    return t


def rms_normalization(x, scale=None, axis=-1, epsilon=None):
    """``x * rsqrt(mean(x^2, axis) + epsilon) * scale`` (Zhang & Sennrich, 2019).

    Args:
        x: a tensor. scale: None or a tensor (a Variable), multiplied with NumPy broadcasting as Keras does
            (so a (n,) scale goes with the last axis, whichever `axis` is normalised).
        axis: an int or a list of axes. epsilon: default `backend.epsilon()`.
    """
    dtype = dtype_of(x)
    x, axes, eps, _ = _norm_setup("rms_normalization", x, axis, epsilon)
    out = F.multiply(x, F.rsqrt(F.add(F.mean(F.square(x), axes, keepdims=True), eps)))
    if scale is not None:  # as Keras: broadcast as it is (aligned with x's trailing axes), never reshaped
        t = F._tensor(scale, F._symbolic(x))
        t = t if dtype_of(t) == dtype_of(x) else F.cast(t, dtype_of(x))
        try:
            np.broadcast_shapes(tuple(s if isinstance(s, int) else 1 for s in N.shape(x)), tuple(N.shape(t)))
        except ValueError:
            raise ShapeError(f"ops.rms_normalization: scale of shape {tuple(N.shape(t))} does not broadcast "
                             f"against x of shape {tuple(N.shape(x))} (Keras multiplies it as it is, aligned with "
                             f"the last axes); give it a broadcastable shape, e.g. (n, 1) to scale axis -2.") from None
        out = F.multiply(out, t)
    return out if dtype_of(out) == dtype else F.cast(out, dtype)  # Keras casts back, integers too


def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=None, **kwargs):
    """Layer normalisation (Ba et al., 2016): each sample to zero mean and unit variance over `axis`, then
    ``* gamma + beta``.

    Args:
        x: a tensor. gamma, beta: None or tensors (Variables) broadcast over the normalised axes.
        axis: an int or a list of axes. epsilon: default `backend.epsilon()`.
        rms_scaling: Keras' deprecated flag: ``x * rsqrt(var + epsilon) * gamma``, with no centring.
    """
    rms_scaling = bool(kwargs.pop("rms_scaling", False))
    if kwargs:
        raise TypeError(f"ops.layer_normalization got unexpected arguments {sorted(kwargs)}.")
    dtype = dtype_of(x)
    x, axes, eps, bshape = _norm_setup("layer_normalization", x, axis, epsilon)
    nd = F._ndim(x)
    trailing = axes == tuple(range(nd - len(axes), nd)) and 0 not in axes
    pshape = tuple(bshape[d] for d in axes)
    if trailing and not rms_scaling and all(_fusable(p, x, pshape) for p in (gamma, beta)):
        out = F.layer_norm(x, *(None if p is None else _weight_of(p, x) for p in (gamma, beta)), axis=axes,
                           epsilon=eps)
    else:
        mean, var = X.moments(x, axes, keepdims=True)
        inv = F.rsqrt(F.add(var, eps))
        if gamma is not None:
            inv = F.multiply(inv, _param(gamma, x, axes, bshape))
        if rms_scaling:
            out = F.multiply(x, inv)
        else:
            res = F.negative(F.multiply(mean, inv))
            if beta is not None:
                res = F.add(res, _param(beta, x, axes, bshape))
            out = F.add(F.multiply(x, inv), res)
    return out if dtype_of(out) == dtype else F.cast(out, dtype)  # Keras casts back, integers too


def _fusable(p, x, pshape) -> bool:
    """Whether gamma/beta `p` can be a weight of the fused `LayerNormOp`: None, or a Variable or array of
    the normalised axes' shape (and, for a Variable, x's dtype)."""
    if p is None:
        return True
    if isinstance(p, KerasTensor) or tuple(np.shape(p)) != pshape:
        return False
    return not isinstance(p, Variable) or p.dtype == dtype_of(x)


def _weight_of(p, x):
    """A gamma/beta for `LayerNormOp`: a Variable as it is, an array as a constant of x's dtype."""
    if isinstance(p, Variable):
        return p
    return F._weight(np.asarray(p, dtype_of(x)))
