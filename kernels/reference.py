"""NumPy float64 references for the kernels, used only by tests.

Written independently of the kernels (vectorised NumPy, textbook formulas), each returns new arrays.
Backward references return the gradients for an upstream gradient `dy`.
"""

from __future__ import annotations

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def sigmoid(x):
    x = f64(x)
    return np.exp(-np.logaddexp(0.0, -x))


def softplus(x):
    return np.logaddexp(0.0, f64(x))


def activation(name: str, x, **p) -> np.ndarray:
    """Keras 3 activation `name` with parameters `p`, float64."""
    x = f64(x)
    if name == "relu":
        slope, mx, th = p.get("negative_slope", 0.0), p.get("max_value"), p.get("threshold", 0.0)
        pos = x if mx is None else np.minimum(x, mx)
        return np.where(x > th, pos, slope * (x - th))
    table = {
        "linear": lambda: x,
        "leaky_relu": lambda: np.where(x > 0, x, p.get("negative_slope", 0.2) * x),
        "relu6": lambda: np.clip(x, 0, 6),
        "elu": lambda: np.where(x > 0, x, p.get("alpha", 1.0) * (np.exp(x) - 1)),
        "selu": lambda: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1)),
        "gelu": lambda: (0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))))
        if p.get("approximate", False) else 0.5 * x * (1 + _erf(x / np.sqrt(2))),
        "sigmoid": lambda: sigmoid(x),
        "hard_sigmoid": lambda: np.clip(x / 6 + 0.5, 0, 1),
        "tanh": lambda: np.tanh(x),
        "softplus": lambda: softplus(x),
        "softsign": lambda: x / (1 + np.abs(x)),
        "silu": lambda: x * sigmoid(x),
        "swish": lambda: x * sigmoid(x),
        "exponential": lambda: np.exp(x),
        "hard_silu": lambda: x * np.clip(x / 6 + 0.5, 0, 1),
        "hard_swish": lambda: x * np.clip(x / 6 + 0.5, 0, 1),
        "mish": lambda: x * np.tanh(softplus(x)),
        "log_sigmoid": lambda: -softplus(-x),
        "hard_tanh": lambda: np.clip(x, -1, 1),
        "celu": lambda: np.maximum(x, 0) + p.get("alpha", 1.0) * (np.exp(np.minimum(x, 0) / p.get("alpha", 1.0)) - 1),
        "tanh_shrink": lambda: x - np.tanh(x),
        "squareplus": lambda: (x + np.sqrt(x * x + p.get("b", 4.0))) / 2,
        "soft_shrink": lambda: np.where(x > p.get("threshold", 0.5), x - p.get("threshold", 0.5),
                                        np.where(x < -p.get("threshold", 0.5), x + p.get("threshold", 0.5), 0.0)),
        "hard_shrink": lambda: np.where(np.abs(x) > p.get("threshold", 0.5), x, 0.0),
        "sparse_plus": lambda: np.where(x <= -1, 0.0, np.where(x < 1, 0.25 * (x + 1) ** 2, x)),
        "sparse_sigmoid": lambda: np.where(x <= -1, 0.0, np.where(x >= 1, 1.0, 0.5 * (x + 1))),
        "threshold": lambda: np.where(x > p["threshold"], x, p["default_value"]),
    }
    return table[name]()


def activation_grad(name: str, x, dy, h: float = 1e-6, **p) -> np.ndarray:
    """dy * f'(x) by a central difference of `activation` in float64 (inputs away from kinks)."""
    x = f64(x)
    return f64(dy) * (activation(name, x + h, **p) - activation(name, x - h, **p)) / (2 * h)


def linear(x, w, b=None, act: str = "linear", **p):
    """act(x @ w + b) over the last axis."""
    z = f64(x) @ f64(w)
    if b is not None:
        z = z + f64(b)
    return activation(act, z, **p)


def linear_grads(x, w, b, dy, act: str = "linear", **p):
    """(dx, dw, db) of `linear`."""
    x, w = f64(x), f64(w)
    z = x @ w + (0 if b is None else f64(b))
    dz = activation_grad(act, z, dy, **p)
    dz2 = dz.reshape(-1, w.shape[1])
    return dz @ w.T, x.reshape(-1, w.shape[0]).T @ dz2, dz2.sum(0)


def softmax(x, axis=-1):
    x = f64(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    x = f64(x)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def softmax_grad(x, dy, axis=-1):
    y = softmax(x, axis)
    return y * (f64(dy) - (f64(dy) * y).sum(axis=axis, keepdims=True))


def log_softmax_grad(x, dy, axis=-1):
    return f64(dy) - softmax(x, axis) * f64(dy).sum(axis=axis, keepdims=True)


def _channel_axes(ndim: int, axis: int) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i != axis % ndim)


def batchnorm_train(x, gamma, beta, eps=1e-3, axis=-1):
    """(y, batch mean, batch biased variance) in training mode."""
    x = f64(x)
    red = _channel_axes(x.ndim, axis)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    mean = x.mean(axis=red)
    var = x.var(axis=red)
    xhat = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return xhat * f64(gamma).reshape(shape) + f64(beta).reshape(shape), mean, var


def batchnorm_train_grads(x, gamma, dy, eps=1e-3, axis=-1):
    """(dx, dgamma, dbeta) of `batchnorm_train`, by the textbook formula over the whole batch."""
    x, dy = f64(x), f64(dy)
    red = _channel_axes(x.ndim, axis)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    n = x.size / x.shape[axis]
    mean = x.mean(axis=red, keepdims=True)
    inv = 1 / np.sqrt(x.var(axis=red, keepdims=True) + eps)
    xhat = (x - mean) * inv
    dgamma = (dy * xhat).sum(axis=red)
    dbeta = dy.sum(axis=red)
    dxhat = dy * f64(gamma).reshape(shape)
    dx = inv / n * (n * dxhat - dxhat.sum(axis=red, keepdims=True)
                    - xhat * (dxhat * xhat).sum(axis=red, keepdims=True))
    return dx, dgamma, dbeta


def layernorm(x, gamma, beta, n_axes=1, eps=1e-3):
    x = f64(x)
    axes = tuple(range(x.ndim - n_axes, x.ndim))
    xhat = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    return xhat * f64(gamma) + f64(beta)


def embedding(ids, table):
    return f64(table)[np.asarray(ids, np.int64)]


def embedding_grad(ids, dy, vocab):
    d = np.zeros((vocab, np.shape(dy)[-1]))
    np.add.at(d, np.asarray(ids, np.int64).reshape(-1), f64(dy).reshape(-1, d.shape[1]))
    return d


def categorical_crossentropy(t, p, from_logits=False, label_smoothing=0.0, eps=1e-7):
    t, p = f64(t), f64(p)
    if label_smoothing:
        t = t * (1 - label_smoothing) + label_smoothing / t.shape[-1]
    if from_logits:
        return -(t * log_softmax(p)).sum(-1)
    q = np.clip(p / p.sum(-1, keepdims=True), eps, 1 - eps)
    return -(t * np.log(q)).sum(-1)


def sparse_categorical_crossentropy(labels, p, from_logits=False, eps=1e-7):
    p = f64(p)
    logp = log_softmax(p) if from_logits else log_softmax(np.log(np.clip(p, eps, 1 - eps)))
    return -np.take_along_axis(logp, np.asarray(labels, np.int64)[..., None], -1)[..., 0]


def binary_crossentropy(t, p, from_logits=False, label_smoothing=0.0, eps=1e-7):
    t, p = f64(t), f64(p)
    if label_smoothing:
        t = t * (1 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        return (np.maximum(p, 0) - p * t + np.log1p(np.exp(-np.abs(p)))).mean(-1)
    q = np.clip(p, eps, 1 - eps)
    return -(t * np.log(q) + (1 - t) * np.log(1 - q)).mean(-1)


def mean_squared_error(t, p):
    return ((f64(p) - f64(t)) ** 2).mean(-1)


def mean_absolute_error(t, p):
    return np.abs(f64(p) - f64(t)).mean(-1)


def dropout_keep(key: int, sample: int, element: int, rate: float) -> bool:
    """The keep bit of one element, with Python integers (independent of the kernels' uint64 code)."""
    m = (1 << 64) - 1

    def mix(z):
        z &= m
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        return z ^ (z >> 31)

    h = mix((mix(key ^ sample) + element) & m)
    return (h >> 40) >= math.ceil(rate * (1 << 24))


def numerical_grad(f, x: np.ndarray, dy: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """d(sum(f(x) * dy))/dx by central differences (float64), for gradient checks."""
    x = f64(x).copy()
    g = np.zeros_like(x)
    flat, gf = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        up = float((f64(f(x)) * dy).sum())
        flat[i] = old - h
        down = float((f64(f(x)) * dy).sum())
        flat[i] = old
        gf[i] = (up - down) / (2 * h)
    return g
