"""`EagerTensor`: what an eager call returns (a layer or model called on arrays, a `keras.ops` function,
an activation, a loss): a NumPy array with tf.keras' tensor convenience ``.numpy()``, so tutorial lines
such as ``loss_fn(y, model(x)).numpy()`` and ``tf.nn.softmax(logits).numpy()`` run. A view, never a copy;
NumPy functions take it as the array it is.

While a `GradientTape` records (ops/tape.py), arithmetic on it (``a + b``, ``2 * x``, ``x ** 2``, ``a @ b``,
``-x``, ``x[:, k]``, and ``+=``, which then makes a new tensor as TensorFlow's does) runs as the
`keras.ops` function of the same meaning, so the tape sees it; otherwise it is NumPy's own."""

from __future__ import annotations

import functools

import numpy as np

from flexflow_keras.utils import tree

# NumPy ufunc -> keras.ops name, for arithmetic on EagerTensors while a tape records
_UFUNC_OPS = {np.add: "add", np.subtract: "subtract", np.multiply: "multiply", np.true_divide: "divide",
              np.power: "power", np.maximum: "maximum", np.minimum: "minimum", np.matmul: "matmul",
              np.negative: "negative", np.exp: "exp", np.log: "log", np.sqrt: "sqrt", np.square: "square",
              np.absolute: "abs", np.tanh: "tanh", np.sin: "sin", np.cos: "cos", np.log1p: "log1p",
              np.expm1: "expm1", np.reciprocal: "reciprocal"}


_REDUCE_OPS = {np.add: "sum", np.maximum: "max", np.minimum: "min"}


class _Unmapped(Exception):
    """A NumPy function called with arguments its keras.ops twin does not take: NumPy's own runs."""


def _plain(fn):
    """`fn` for NumPy's call, refusing the arguments only NumPy has (dtype=, out=, where=)."""
    def call(*args, **kwargs):
        if any(kwargs.pop(k, None) is not None for k in ("dtype", "out")) or "where" in kwargs:
            raise _Unmapped
        return fn(*args, **kwargs)
    return call


def _function_ops() -> dict:
    """NumPy function -> its keras.ops twin, for recorded tensors (built once)."""
    global _FUNCTIONS
    if _FUNCTIONS is None:
        from flexflow_keras import ops

        _FUNCTIONS = {
            np.sum: _plain(lambda a, axis=None, keepdims=False: ops.sum(a, axis, keepdims)),
            np.mean: _plain(lambda a, axis=None, keepdims=False: ops.mean(a, axis, keepdims)),
            np.max: _plain(lambda a, axis=None, keepdims=False: ops.max(a, axis, keepdims)),
            np.amax: _plain(lambda a, axis=None, keepdims=False: ops.max(a, axis, keepdims)),
            np.min: _plain(lambda a, axis=None, keepdims=False: ops.min(a, axis, keepdims)),
            np.amin: _plain(lambda a, axis=None, keepdims=False: ops.min(a, axis, keepdims)),
            np.reshape: _plain(lambda a, shape=None, newshape=None, order="C": ops.reshape(
                a, tuple(np.atleast_1d(shape if shape is not None else newshape)))),
            np.transpose: _plain(lambda a, axes=None: ops.transpose(a, axes)),
            np.squeeze: _plain(lambda a, axis=None: ops.squeeze(a, axis)),
            np.expand_dims: _plain(lambda a, axis: ops.expand_dims(a, axis)),
            np.concatenate: _plain(lambda arrays, axis=0: ops.concatenate(list(arrays), axis)),
            np.stack: _plain(lambda arrays, axis=0: ops.stack(list(arrays), axis)),
            np.dot: _plain(lambda a, b: ops.matmul(a, b)),
            np.clip: _plain(lambda a, a_min, a_max: ops.clip(a, a_min, a_max)),
            np.where: _plain(lambda cond, x, y: ops.where(cond, x, y)),
        }
    return _FUNCTIONS


_FUNCTIONS: dict | None = None


def _untracked(inputs, result, what: str) -> None:
    from flexflow_keras.ops import tape

    tape.note_untracked(inputs, result, what)


def _recording() -> bool:
    from flexflow_keras.ops import tape

    return tape.recording()


def _check_matmul(a, b) -> None:
    """`a @ b`'s inner dims agree, else a ShapeError saying so (NumPy's own message names a gufunc signature);
    TensorFlow refuses the same pairs (its InvalidArgumentError 'Matrix size-incompatible')."""
    sa, sb = np.shape(a), np.shape(b)
    if not sa or not sb:
        return  # a scalar operand: NumPy's own error
    inner_b = sb[0] if len(sb) == 1 else sb[-2]
    if sa[-1] != inner_b:
        from flexflow_keras.errors import ShapeError

        raise ShapeError(f"a @ b (matrix multiplication): the last dim of a {tuple(sa)} must equal the "
                         f"{'only' if len(sb) == 1 else 'second-to-last'} dim of b {tuple(sb)} ({sa[-1]} vs "
                         f"{inner_b}). Transpose one of them (tf.transpose(b), or tf.matmul(a, b, "
                         f"transpose_b=True)) or reshape it.")


class EagerTensor(np.ndarray):
    """A NumPy array with tf.keras' tensor conveniences: ``.numpy()`` returns a plain ndarray copy."""

    def numpy(self) -> np.ndarray:
        """The value as a plain NumPy array; a NumPy scalar (np.float32, ...) for a 0-d tensor, as a
        TensorFlow scalar's numpy() is."""
        value = np.array(self, copy=True).view(np.ndarray)
        return value[()] if value.ndim == 0 else value

    def get_shape(self):
        """TensorFlow's name for `shape`, with `as_list` and `rank` (``x.get_shape().as_list()``)."""
        from flexflow_keras.ops.shape_tuple import ShapeTuple

        return ShapeTuple(self.shape)

    def set_shape(self, shape) -> None:
        """TensorFlow's static-shape hint: nothing to do on a value, but a shape it does not have is the
        ValueError TensorFlow raises (TensorFlow's time-series tutorial calls it in its split_window)."""
        check_shape(self.shape, shape)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if (method == "__call__" and len(inputs) == 2 and isinstance(inputs[0], np.generic)
                and isinstance(inputs[1], EagerTensor)):
            # a NumPy scalar before a tensor (``np.sqrt(d) * x``: NumPy's scalar runs the ufunc, never the
            # tensor's reflected operator) takes the tensor's dtype, as in TensorFlow
            inputs = (_operand(inputs[0], inputs[1].dtype), inputs[1])
        recording = _recording()
        name = _UFUNC_OPS.get(ufunc)
        if name is not None and method == "__call__" and not kwargs and recording:
            from flexflow_keras import ops

            ints = any(isinstance(a, np.ndarray) and a.dtype.kind in "iu" for a in inputs)
            args = [_python_number(a, ints) for a in inputs]
            return getattr(ops, name)(*args)
        if recording and method == "reduce" and ufunc in _REDUCE_OPS and set(kwargs) <= {"axis", "keepdims"}:
            from flexflow_keras import ops

            return getattr(ops, _REDUCE_OPS[ufunc])(inputs[0], kwargs.get("axis", 0), kwargs.get("keepdims", False))
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
        if recording:
            _untracked(inputs, result, f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}"))
        if isinstance(result, np.generic):
            return eager(result)  # a tensor's arithmetic gives a tensor, 0-d ones too (``w * 3.0 + b``, x.mean())
        return result.view(EagerTensor) if type(result) is np.ndarray else result

    def __array_function__(self, func, types, args, kwargs):
        if not _recording():
            return super().__array_function__(func, types, args, kwargs)
        mapped = _function_ops().get(func)
        if mapped is not None:
            try:
                return mapped(*args, **kwargs)
            except _Unmapped:
                pass
        result = super().__array_function__(func, types, args, kwargs)
        _untracked(tree.flatten(list(args)), result, f"np.{func.__name__}")
        return result

    # ndarray methods of the same meaning as keras.ops functions, recorded while a tape records
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        if _recording() and dtype is None and out is None and not kwargs:
            from flexflow_keras import ops

            return ops.sum(self, axis, keepdims)
        return super().sum(axis, dtype, out, keepdims, **kwargs)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        if _recording() and dtype is None and out is None and not kwargs:
            from flexflow_keras import ops

            return ops.mean(self, axis, keepdims)
        return super().mean(axis, dtype, out, keepdims, **kwargs)

    def reshape(self, *shape, **kwargs):
        if _recording() and not kwargs:
            from flexflow_keras import ops

            target = shape[0] if len(shape) == 1 and not isinstance(shape[0], int | np.integer) else shape
            return ops.reshape(self, tuple(int(d) for d in np.atleast_1d(target)) if np.ndim(target) else (int(target),))
        return super().reshape(*shape, **kwargs)

    def transpose(self, *axes):
        if _recording():
            from flexflow_keras import ops

            perm = axes[0] if len(axes) == 1 and not isinstance(axes[0], int | np.integer) else axes
            return ops.transpose(self, tuple(perm) if perm else None)
        return super().transpose(*axes)

    @property
    def T(self):  # noqa: N802 - NumPy's name
        return self.transpose() if _recording() else super().T


    def __getitem__(self, key):
        if _recording():
            from flexflow_keras.ops import numpy_api

            result = numpy_api.get_item(self, key)
            if not numpy_api._basic(key):  # advanced indexing runs as NumPy's: marked for the tape
                _untracked([self], result, "indexing with an array")
            return result
        item = super().__getitem__(key)
        return eager_scalar(item) if isinstance(item, np.generic) else item  # ys[0].numpy(), as TensorFlow's

    def __iter__(self):
        # the items of a batch answer .numpy() too (``for x, y in zip(images, labels): y.numpy()``)
        if self.ndim == 1:
            return (eager_scalar(v) for v in self.view(np.ndarray))
        return super().__iter__()

    # Python's operators follow TensorFlow's rule: the other operand, when it is no tensor, is converted to
    # this tensor's dtype (``rewards_list + gamma * tf.reduce_max(q, 1)`` stays float32), see _operand
    def __add__(self, other):
        return super().__add__(_operand(other, self.dtype))

    def __radd__(self, other):
        return super().__radd__(_operand(other, self.dtype))

    def __sub__(self, other):
        return super().__sub__(_operand(other, self.dtype))

    def __rsub__(self, other):
        return super().__rsub__(_operand(other, self.dtype))

    def __mul__(self, other):
        return super().__mul__(_operand(other, self.dtype))

    def __rmul__(self, other):
        return super().__rmul__(_operand(other, self.dtype))

    def __truediv__(self, other):
        return super().__truediv__(_operand(other, self.dtype))

    def __rtruediv__(self, other):
        return super().__rtruediv__(_operand(other, self.dtype))

    def __floordiv__(self, other):
        return super().__floordiv__(_operand(other, self.dtype))

    def __rfloordiv__(self, other):
        return super().__rfloordiv__(_operand(other, self.dtype))

    def __mod__(self, other):
        return super().__mod__(_operand(other, self.dtype))

    def __rmod__(self, other):
        return super().__rmod__(_operand(other, self.dtype))

    def __pow__(self, other):
        return super().__pow__(_operand(other, self.dtype))

    def __rpow__(self, other):
        return super().__rpow__(_operand(other, self.dtype))

    def __matmul__(self, other):
        other = _operand(other, self.dtype)
        _check_matmul(self, other)
        return super().__matmul__(other)

    def __rmatmul__(self, other):
        other = _operand(other, self.dtype)
        _check_matmul(other, self)
        return super().__rmatmul__(other)

    def __lt__(self, other):
        return super().__lt__(_operand(other, self.dtype))

    def __le__(self, other):
        return super().__le__(_operand(other, self.dtype))

    def __gt__(self, other):
        return super().__gt__(_operand(other, self.dtype))

    def __ge__(self, other):
        return super().__ge__(_operand(other, self.dtype))

    # TensorFlow's tensors are immutable: `loss += penalty` makes a new tensor, which the tape records
    def __iadd__(self, other):
        return self + other if _recording() else super().__iadd__(other)

    def __isub__(self, other):
        return self - other if _recording() else super().__isub__(other)

    def __imul__(self, other):
        return self * other if _recording() else super().__imul__(other)

    def __itruediv__(self, other):
        return self / other if _recording() else super().__itruediv__(other)


# the dtype kinds a tensor of each kind takes a non-tensor operand from (TensorFlow converts it to the
# tensor's dtype; it refuses other kinds, e.g. a float list added to an int32 tensor, where NumPy's
# promotion is left to run)
_TAKES_KINDS = {"f": "biuf", "c": "biufc", "i": "biu", "u": "bu", "b": "b"}


def _python_number(a, ints: bool):
    """A ufunc's operand for keras.ops on a tape: Python numbers as floats (weak, so a float tensor keeps its
    dtype), but a Python int beside an integer tensor stays an int, as TensorFlow converts it to the tensor's
    dtype: ``tf.shape(x)[1] - 1`` is int32 (as float it was float32, and could not slice)."""
    if isinstance(a, bool) or not isinstance(a, float | int):
        return a
    return a if ints and isinstance(a, int) else float(a)


def _operand(other, dtype: np.dtype):
    """`other`, a binary operator's second operand beside a tensor of `dtype`, as TensorFlow's operators
    take it: a Python list or tuple, a NumPy array or a NumPy scalar (``np.sqrt(d)``, a float64) converted
    to the tensor's dtype, where NumPy would promote the result (float32 tensor + float64 array ->
    float64). Tensors, variables, Python numbers (NumPy keeps the tensor's dtype for those already) and
    everything else are left as they are."""
    if isinstance(other, list | tuple):
        try:
            value = np.asarray(other)
        except (ValueError, TypeError):  # ragged or mixed contents: NumPy's own handling
            return other
    elif (type(other) is np.ndarray or isinstance(other, np.generic)) and not isinstance(other, EagerTensor):
        value = other
    else:
        return other
    if value.dtype == dtype or value.dtype.kind not in _TAKES_KINDS.get(dtype.kind, ""):
        return value if isinstance(other, list | tuple) and value.dtype.kind != "O" else other
    return np.asarray(value, dtype=dtype) if isinstance(value, np.ndarray) else dtype.type(value)


_SCALARS: dict = {}


def _scalar_class(t: type) -> type:
    """`t` (np.float32, np.int64, ...) with TensorFlow's ``.numpy()``; `t` itself where NumPy refuses a
    subclass (np.bool_)."""
    cls = _SCALARS.get(t)
    if cls is None:
        cls = type(t.__name__, (t,), {"numpy": lambda self, _t=t: _t(self),  # the plain NumPy scalar
                                      "__reduce__": lambda self, _t=t: (_t, (_t(self),)),  # pickles as that
                                      "__doc__": f"A {t.__name__} item of a tensor: .numpy() gives the value."})
        if not hasattr(cls(0), "numpy"):
            cls = t
        _SCALARS[t] = cls
    return cls


def eager_scalar(value):
    """An item of a tensor (``labels[0]``, ``for y in labels``): the NumPy scalar it is, as a subclass of
    its type with TensorFlow's ``.numpy()``, so it stays an int / float to every NumPy and Python check
    (``range``, shapes, ``isinstance(v, np.integer)``, dict keys) while scripts written for TensorFlow's 0-d
    tensors call ``.numpy()`` on it."""
    if not isinstance(value, np.generic):  # an object array's item (a BatchDim, a Python int) is itself
        return value
    cls = _scalar_class(type(value))
    return value if cls is type(value) else cls(value)


def check_shape(actual: tuple, shape) -> None:
    """Raise TensorFlow's ValueError when `shape` (None entries or a None rank match anything) does not fit
    a value of shape `actual` (`set_shape` of an eager tensor)."""
    dims = getattr(shape, "dims", shape)  # a tf.TensorShape-like value, or a list / tuple
    if dims is None:
        return
    dims = [None if d is None or getattr(d, "value", d) is None else int(getattr(d, "value", d)) for d in dims]
    if len(dims) != len(actual) or any(d is not None and d != a for d, a in zip(dims, actual, strict=False)):
        raise ValueError(f"Tensor's shape {tuple(actual)} is not compatible with supplied shape "
                         f"{tuple(dims)}.")


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


def eager_leaves(result):
    """`result` with each ndarray and NumPy scalar in it (in tuples and lists too, as ``ops.split`` and
    ``ops.unique`` give) an `EagerTensor`; KerasTensors, Python numbers and other values as they are. A string
    scalar (``tf.strings`` on one string) becomes `eager_scalar`'s: still a hashable str / bytes."""
    if type(result) is np.ndarray or (isinstance(result, np.generic) and result.dtype.kind not in "USO"):
        return eager(result)
    if isinstance(result, np.generic):
        return eager_scalar(result)
    if isinstance(result, list):
        return [eager_leaves(r) for r in result]
    if isinstance(result, tuple):
        items = [eager_leaves(r) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    return result


def eager_results(fn):
    """`fn` returning `eager_leaves` of its result: the public `keras.ops` functions and TensorFlow's mapped
    calls go through it, so an eager call answers ``.numpy()`` on every path (``ops.ones``, ``ops.arange``,
    ``ops.split``'s parts), as Keras 3's TensorFlow tensors do."""
    if getattr(fn, "_eager_results", False):
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        return eager_leaves(fn(*args, **kwargs))

    call._eager_results = True
    return call
