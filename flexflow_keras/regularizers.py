"""`keras.regularizers`: weight penalties the training loop adds to the loss and to the gradients.

Each regularizer has `penalty(w) -> float` (what it adds to the loss; also `__call__`) and
`gradient(w) -> np.ndarray` (d penalty / d w, what the training loop adds to the weight's gradient).
Any other callable of the weight, as Keras 3 takes (a function, or a `Regularizer` subclass that only
defines `__call__`), is differentiated by a `GradientTape` (`penalty_and_gradient`).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.utils.serialization import (
    Configurable,
    deserialize_instance,
    named_instance,
    serialize_keras_object,
)


def _check_factor(who: str, name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{who} expects a number for {name}, received {name}={value!r}.") from None
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{who} expects a non-negative finite {name}, received {name}={value!r}.")
    return v


class Regularizer(Configurable):
    """Base class: subclasses implement `penalty`, `gradient` and `get_config`."""

    def __call__(self, w) -> float:
        return self.penalty(w)

    def penalty(self, w) -> float:
        raise NotImplementedError(f"{type(self).__name__} must implement penalty(w).")

    def gradient(self, w) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must implement gradient(w).")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in self.get_config().items())})"


class L1L2(Regularizer):
    """``l1 * sum(|w|) + l2 * sum(w**2)``.

    Args:
        l1: L1 factor.
        l2: L2 factor.
    """

    elementwise = True  # penalty and gradient are sums / maps over elements: a weight's pieces add up

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _check_factor(type(self).__name__, "l1", l1)
        self.l2 = _check_factor(type(self).__name__, "l2", l2)

    def penalty(self, w) -> float:
        w = np.asarray(w, dtype=np.float64)
        out = 0.0
        if self.l1:
            out += self.l1 * float(np.sum(np.abs(w)))
        if self.l2:
            out += self.l2 * float(np.sum(np.square(w)))
        return out

    def gradient(self, w) -> np.ndarray:
        w = np.asarray(w)
        g = np.zeros_like(w)
        if self.l1:
            g += self.l1 * np.sign(w)
        if self.l2:
            g += (2.0 * self.l2) * w
        return g

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    """``l1 * sum(|w|)``; the gradient at 0 is 0.

    Args:
        l1: the factor (default 0.01).
    """

    def __init__(self, l1=0.01):
        super().__init__(l1=l1, l2=0.0)

    def get_config(self):
        return {"l1": self.l1}


class L2(L1L2):
    """``l2 * sum(w**2)``.

    Args:
        l2: the factor (default 0.01).
    """

    def __init__(self, l2=0.01):
        super().__init__(l1=0.0, l2=l2)

    def get_config(self):
        return {"l2": self.l2}


class OrthogonalRegularizer(Regularizer):
    """``factor * mean(|u_i . u_k|)`` over the pairs i != k of the L2-normalized rows (``mode="rows"``) or
    columns (``mode="columns"``) u of a rank-2 weight, as Keras 3's.

    Args:
        factor: the factor (default 0.01).
        mode: ``"rows"`` or ``"columns"``.
    """

    elementwise = False  # the penalty couples rows: a weight's pieces do not add up

    def __init__(self, factor=0.01, mode="rows"):
        self.factor = _check_factor(type(self).__name__, "factor", factor)
        if mode not in ("rows", "columns"):
            raise ValueError(f"OrthogonalRegularizer expects mode='rows' or mode='columns', received mode={mode!r}.")
        self.mode = mode

    def _rows(self, w) -> np.ndarray:
        w = np.asarray(w, dtype=np.float64)
        if w.ndim != 2:
            raise ValueError(f"OrthogonalRegularizer applies to rank-2 weights (a Dense kernel), received a weight "
                             f"of shape {w.shape}; use it as kernel_regularizer of a Dense layer, or L2 for others.")
        return w if self.mode == "rows" else w.T

    def _parts(self, rows: np.ndarray):
        """(inverse norms, clipped or not, normalized rows, sign of their off-diagonal products, pair count)."""
        eps = _epsilon()
        square_sum = np.sum(np.square(rows), axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            inv = 1.0 / np.sqrt(square_sum)
        clipped = inv >= 1.0 / eps  # Keras' min(rsqrt(sum), 1/epsilon): constant there
        inv = np.where(clipped, 1.0 / eps, inv)
        u = rows * inv
        product = u @ u.T
        np.fill_diagonal(product, 0.0)
        n = rows.shape[0]
        return inv, clipped, u, product, n * (n - 1.0)

    def penalty(self, w) -> float:
        _, _, _, product, pairs2 = self._parts(self._rows(w))
        with np.errstate(divide="ignore", invalid="ignore"):  # one row: 0/0, NaN as in Keras
            return float(self.factor * np.sum(np.abs(product)) / pairs2)

    def gradient(self, w) -> np.ndarray:
        rows = self._rows(w)
        inv, clipped, u, product, pairs2 = self._parts(rows)
        with np.errstate(divide="ignore", invalid="ignore"):
            g_u = (2.0 * self.factor / pairs2) * (np.sign(product) @ u)
        # u = rows * inv with inv = sum(rows**2) ** -1/2: d inv / d rows = -inv**3 * rows (0 where clipped)
        radial = np.where(clipped, 0.0, inv ** 3 * np.sum(g_u * rows, axis=1, keepdims=True))
        g = inv * g_u - radial * rows
        g = g if self.mode == "rows" else g.T
        return g.astype(np.asarray(w).dtype if np.asarray(w).dtype.kind == "f" else np.float32)

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode}


def _epsilon() -> float:
    from flexflow_keras import backend

    return float(backend.epsilon())


# Keras spellings: `regularizers.l2(1e-4)`, `regularizers.l1_l2(l1=..., l2=...)`, `orthogonal_regularizer`.
l1, l2, l1_l2, orthogonal_regularizer = L1, L2, L1L2, OrthogonalRegularizer

# the names regularizers.get takes, as Keras 3's: each class's name and its snake_case (so "l1l2", not "l1_l2")
ALL_OBJECTS = {"L1": L1, "L2": L2, "L1L2": L1L2, "OrthogonalRegularizer": OrthogonalRegularizer,
               "Regularizer": Regularizer, "l1": L1, "l2": L2, "l1l2": L1L2,
               "orthogonal_regularizer": OrthogonalRegularizer, "regularizer": Regularizer}


def serialize(regularizer):
    """``{"class_name", "config"}`` of a regularizer."""
    return serialize_keras_object(regularizer)


def deserialize(config, custom_objects=None):
    """A regularizer from `serialize`'s output."""
    return deserialize_instance(config, ALL_OBJECTS, custom_objects, kind="regularizer")


def get(identifier):
    """A regularizer from a name (``"l1"``, ``"l2"``, ``"l1l2"``, ``"orthogonal_regularizer"`` or a class
    name, as Keras 3 takes them), config dict, class or instance.

    Plain callables are accepted as they are (training differentiates them: `penalty_and_gradient`).
    """
    if identifier is None or isinstance(identifier, Regularizer):
        return identifier
    if isinstance(identifier, str):
        obj = named_instance(identifier, ALL_OBJECTS)
        if obj is None:
            hint = " (Keras 3 spells it 'l1l2', or pass regularizers.l1_l2(l1=..., l2=...))" \
                if identifier == "l1_l2" else ""
            raise ValueError(f"Unknown regularizer '{identifier}' given to regularizers.get(){hint}. "
                             f"Valid names: {sorted(ALL_OBJECTS)}, or a registered custom regularizer.")
        return obj
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier {identifier!r}; pass 'l2', "
                     "regularizers.L2(1e-4) or similar.")


def has_own_gradient(regularizer) -> bool:
    """Whether `regularizer` gives its own `penalty` and `gradient` (the built-in ones do)."""
    kind = type(regularizer)
    return (getattr(kind, "penalty", Regularizer.penalty) is not Regularizer.penalty
            and getattr(kind, "gradient", Regularizer.gradient) is not Regularizer.gradient)


def penalty_and_gradient(regularizer, w) -> tuple[float, np.ndarray]:
    """What training adds for a weight's regularizer: the penalty and d penalty / d w, as arrays of w's dtype.

    A regularizer with its own `penalty` and `gradient` gives them; any other callable (``def l1(w): return
    tf.reduce_sum(tf.abs(0.01 * w))``, or a `Regularizer` subclass defining only `__call__`) is called on the
    weight as a Variable under a `GradientTape`, as Keras 3 differentiates the loss it adds it to.
    """
    w = np.asarray(w)
    if has_own_gradient(regularizer):
        return float(regularizer.penalty(w)), np.asarray(regularizer.gradient(w), dtype=w.dtype)
    from flexflow_keras.ops.graph import Variable
    from flexflow_keras.ops.tape import GradientTape

    var = Variable("regularized_weight", w.shape, str(w.dtype), initializer=w)
    with GradientTape() as tape:
        value = regularizer(var)
    try:
        penalty = float(np.asarray(value))
    except (TypeError, ValueError):
        raise ValueError(f"The regularizer {regularizer!r} must return a scalar for a weight of shape {w.shape}, "
                         f"received {value!r}.") from None
    grad = tape.gradient(value, var)
    return penalty, (np.zeros_like(w) if grad is None else np.asarray(grad, dtype=w.dtype))
