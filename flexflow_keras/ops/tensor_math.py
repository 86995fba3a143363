"""The arithmetic operators of symbolic tensors (`KerasTensor`) and weights (`Variable`), one mixin for
both: ``x * 2``, ``self.w / self.scale``, ``-x``, ``a @ b`` build graph ops through `flexflow_keras.ops`, so
custom layers and losses train like any op. On a weight outside a symbolic call they compute on the current
value, as the ops do. A NumPy array on the left keeps NumPy's own meaning (it reads the value).
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

    def __neg__(self):
        return _ops().negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _ops().abs(self)
