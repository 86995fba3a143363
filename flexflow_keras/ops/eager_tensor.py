"""`EagerTensor`: what an eager call returns (a layer or model called on arrays, a `keras.ops` function,
an activation, a loss): a NumPy array with tf.keras' tensor convenience ``.numpy()``, so tutorial lines
such as ``loss_fn(y, model(x)).numpy()`` and ``tf.nn.softmax(logits).numpy()`` run. A view, never a copy;
NumPy functions take it as the array it is.

While a `GradientTape` records (ops/tape.py), arithmetic on it (``a + b``, ``2 * x``, ``x ** 2``, ``a @ b``,
``-x``, ``x[:, k]``, and ``+=``, which then makes a new tensor as TensorFlow's does) runs as the
`keras.ops` function of the same meaning, so the tape sees it; otherwise it is NumPy's own."""

from __future__ import annotations

import numpy as np

from flexflow_keras.utils import tree

# NumPy ufunc -> keras.ops name, for arithmetic on EagerTensors while a tape records
_UFUNC_OPS = {np.add: "add", np.subtract: "subtract", np.multiply: "multiply", np.true_divide: "divide",
              np.power: "power", np.maximum: "maximum", np.minimum: "minimum", np.matmul: "matmul",
              np.negative: "negative", np.exp: "exp", np.log: "log", np.sqrt: "sqrt", np.square: "square",
              np.absolute: "abs", np.tanh: "tanh", np.sin: "sin", np.cos: "cos", np.log1p: "log1p",
              np.expm1: "expm1", np.reciprocal: "reciprocal"}


def _recording() -> bool:
    from flexflow_keras.ops import tape

    return tape.recording()


class EagerTensor(np.ndarray):
    """A NumPy array with tf.keras' tensor conveniences: ``.numpy()`` returns a plain ndarray copy."""

    def numpy(self) -> np.ndarray:
        """The value as a plain NumPy array (0-d for a scalar, as a TensorFlow scalar's numpy() is one)."""
        return np.array(self, copy=True).view(np.ndarray)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = _UFUNC_OPS.get(ufunc)
        if name is not None and method == "__call__" and not kwargs and _recording():
            from flexflow_keras import ops

            args = [float(a) if isinstance(a, float | int) and not isinstance(a, bool) else a for a in inputs]
            return getattr(ops, name)(*args)
        # NumPy's own ufunc, results viewed back as EagerTensors (scalars stay scalars, as before)
        plain = tuple(a.view(np.ndarray) if isinstance(a, EagerTensor) else a for a in inputs)
        outs = kwargs.get("out")
        if outs is not None:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, EagerTensor) else o for o in outs)
        result = getattr(ufunc, method)(*plain, **kwargs)
        if outs is not None:
            return outs[0] if len(outs) == 1 else outs
        if isinstance(result, tuple):
            return tuple(r.view(EagerTensor) if type(r) is np.ndarray else r for r in result)
        if method == "__call__" and isinstance(result, np.generic):
            return eager(result)  # a tensor's arithmetic gives a tensor, 0-d ones too (``w * 3.0 + b``)
        return result.view(EagerTensor) if type(result) is np.ndarray else result

    def __getitem__(self, key):
        if _recording():
            from flexflow_keras.ops import numpy_api

            return numpy_api.get_item(self, key)
        return super().__getitem__(key)

    # TensorFlow's tensors are immutable: `loss += penalty` makes a new tensor, which the tape records
    def __iadd__(self, other):
        return self + other if _recording() else super().__iadd__(other)

    def __isub__(self, other):
        return self - other if _recording() else super().__isub__(other)

    def __imul__(self, other):
        return self * other if _recording() else super().__imul__(other)

    def __itruediv__(self, other):
        return self / other if _recording() else super().__itruediv__(other)


def eager(value):
    """`value` (an ndarray or a NumPy scalar) viewed as an `EagerTensor`; anything else as it is."""
    if type(value) is np.ndarray:
        return value.view(EagerTensor)
    if isinstance(value, np.generic):
        return np.asarray(value).view(EagerTensor)
    return value


def as_eager(outputs):
    """`outputs` (a structure of arrays) with every ndarray viewed as an `EagerTensor`."""
    return tree.map_structure(lambda a: a.view(EagerTensor) if type(a) is np.ndarray else a, outputs)
