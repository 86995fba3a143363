"""The arithmetic, comparison and logical operators of symbolic tensors (`KerasTensor`) and weights
(`Variable`), one mixin for both: ``x * 2``, ``self.w / self.scale``, ``-x``, ``a @ b``, ``self.w > 0``,
``x // 2``, ``mask & other``, ``round(w, 1)`` build graph ops through `flexflow_keras.ops`, so custom layers
and losses train like any op (gradients flow through the differentiable ones). On a weight outside a
symbolic call they compute on the current value, as the ops do, and a GradientTape sees them. A NumPy
array on the left keeps NumPy's own meaning (it reads the value).

The set and meaning are Keras 3's `KerasVariable` operators: ``& | ^`` are logical (bool results, as
Keras' ``logical_and / or / xor``), ``~`` is logical on bools and TensorFlow's bitwise invert on integers,
``round(v, n)`` is `ops.round` at n decimals. ``==`` and ``!=`` are left to each class (a KerasTensor
compares element-wise only inside a layer's call(); a Variable compares by identity, so weights stay usable
as dict keys and list members).
"""

from __future__ import annotations


def _ops():
    from flexflow_keras import ops

    return ops


class TensorMath:
    """Mixin giving tensors and weights their arithmetic operators (each maps to a `keras.ops` function)."""

    def _binary(self, other, name: str, reverse: bool = False):
        fn = getattr(_ops(), name)
        return fn(other, self) if reverse else fn(self, other)

    def __add__(self, o):
        return self._binary(o, "add")

    def __radd__(self, o):
        return self._binary(o, "add", True)

    def __sub__(self, o):
        return self._binary(o, "subtract")

    def __rsub__(self, o):
        return self._binary(o, "subtract", True)

    def __mul__(self, o):
        return self._binary(o, "multiply")

    def __rmul__(self, o):
        return self._binary(o, "multiply", True)

    def __truediv__(self, o):
        return self._binary(o, "divide")

    def __rtruediv__(self, o):
        return self._binary(o, "divide", True)

    def __matmul__(self, o):
        return self._binary(o, "matmul")

    def __rmatmul__(self, o):
        return self._binary(o, "matmul", True)

    def __pow__(self, o):
        return self._binary(o, "power")

    def __rpow__(self, o):
        return self._binary(o, "power", True)

    def __floordiv__(self, o):
        return self._binary(o, "floor_divide")

    def __rfloordiv__(self, o):
        return self._binary(o, "floor_divide", True)

    def __mod__(self, o):
        return self._binary(o, "mod")

    def __rmod__(self, o):
        return self._binary(o, "mod", True)

    def __lt__(self, o):
        return self._binary(o, "less")

    def __le__(self, o):
        return self._binary(o, "less_equal")

    def __gt__(self, o):
        return self._binary(o, "greater")

    def __ge__(self, o):
        return self._binary(o, "greater_equal")

    def __and__(self, o):
        return self._binary(o, "logical_and")

    def __rand__(self, o):
        return self._binary(o, "logical_and", True)

    def __or__(self, o):
        return self._binary(o, "logical_or")

    def __ror__(self, o):
        return self._binary(o, "logical_or", True)

    def __xor__(self, o):
        return self._binary(o, "logical_xor")

    def __rxor__(self, o):
        return self._binary(o, "logical_xor", True)

    def __invert__(self):
        import numpy as np

        ops = _ops()
        kind = np.dtype(self.dtype).kind if self.dtype != "string" else "U"
        if kind == "i":  # TensorFlow's bitwise invert of two's complement integers: ~x == -x - 1
            return ops.subtract(ops.negative(self), np.asarray(1, self.dtype))
        if kind == "u":
            return ops.subtract(np.asarray(np.iinfo(self.dtype).max, self.dtype), self)
        return ops.logical_not(self)

    def __round__(self, ndigits=None):
        return _ops().round(self, ndigits or 0)

    def __neg__(self):
        return _ops().negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _ops().abs(self)
