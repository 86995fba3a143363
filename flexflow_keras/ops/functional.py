"""The functional op API (docs/contracts.md section 3): symbolic on KerasTensors, eager on arrays.

Each function builds an op and hands it to `apply_op`, which records an `OpNode` when any input is a
`KerasTensor` and otherwise runs the op's CPU forward at once on NumPy arrays. Mixed arguments are
converted: Python numbers become attributes (`ScalarOp`), arrays become constants (`constant`), and
`Variable`s become weight tensors (`VariableOp`) or, for ``matmul(x, w)``, the Dense op's kernel.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence

import numpy as np

from flexflow_keras.ops import assign_in_call
from flexflow_keras.ops import batch_second as _batch_second
from flexflow_keras.ops import tape as _tape
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.graph import KerasTensor, OpNode, Variable
from flexflow_keras.ops.math_ops import (
    BINARY_OPS,
    CastOp,
    CompareOp,
    ReduceOp,
    ScalarOp,
    StopGradientOp,
    UnaryOp,
    WhereOp,
)
from flexflow_keras.ops.nn_ops import (
    ActivationOp,
    DropoutOp,
    EmbeddingOp,
    LinearOp,
    LogSoftmaxOp,
    MatMulOp,
    SoftmaxOp,
    VariableOp,
)
from flexflow_keras.ops.normalization import BatchNormOp, LayerNormOp
from flexflow_keras.ops.shape_ops import ConcatOp, ReshapeOp, TransposeOp
from kernels.activations import ACTIVATION_NAMES
from kernels.reduce import normalize_axes

_py_max = builtins.max  # `max` is redefined below as the Keras op


_symbolic_calls = [0]  # > 0 while a layer's call() runs on symbolic inputs


class symbolic_call:
    """While a layer's call() runs on KerasTensors, ops on its weights alone (``ops.sum(self.w)``, as in an
    ``add_loss`` penalty) are symbolic too, as in Keras."""

    def __enter__(self):
        _symbolic_calls[0] += 1

    def __exit__(self, *exc):
        _symbolic_calls[0] -= 1
        if _symbolic_calls[0] == 0:
            assign_in_call.clear()


def _symbolic(*values) -> bool:
    if builtins.any(isinstance(v, KerasTensor) for v in values):
        return True
    return _symbolic_calls[0] > 0 and builtins.any(isinstance(v, Variable) for v in values)


def _ndim(x) -> int:
    return x.ndim if isinstance(x, KerasTensor | Variable) else np.ndim(x)


def _params(params: dict) -> tuple[tuple[str, float], ...]:
    return tuple(sorted((k, v) for k, v in params.items() if v is not None))


def constant(value, dtype: str | None = None, name: str | None = None) -> KerasTensor:
    """A symbolic constant tensor (a non-trainable weight read by a `VariableOp`).

    Args:
        value: array-like. dtype: its dtype (default: value's, float64 narrowed to float32).
        name: optional node name.
    """
    arr = np.asarray(value, dtype=dtype)
    if dtype is None and arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    var = Variable("constant", arr.shape, str(arr.dtype), initializer=arr, trainable=False)
    return OpNode(VariableOp(), (), (var,), name=name).outputs[0]


def _tensor(v, symbolic: bool, dtype=None):
    """An input for an op: KerasTensors as is; arrays, numbers, Variables as constants when symbolic."""
    if isinstance(v, KerasTensor):
        return v
    if isinstance(v, Variable):
        if symbolic:
            assigned = assign_in_call.read(v)  # assigned in this call: w.assign(w * mask)
            return assigned if assigned is not None else OpNode(VariableOp(), (), (v,)).outputs[0]
        _tape.read_variable(v)
        return v.value
    if symbolic:
        return constant(v, dtype)
    if dtype is None and type(v) in (float, int):  # Python numbers are weakly typed: float32 and int32, as Keras
        return np.asarray(v, dtype=np.float32 if type(v) is float else np.int32)
    if dtype is None and isinstance(v, list | tuple):  # Keras' tensor of a list: int32 or float32, not 64-bit
        from flexflow_keras.ops.dtype_rules import dtype_of

        dtype = dtype_of(v)
    return np.asarray(v, dtype=dtype)


def _weight(w):
    """A weight argument: Variables (and tensors computed in call(): ops/weights_as_inputs.py) as they are;
    arrays become constant Variables when needed."""
    if w is None or isinstance(w, Variable | KerasTensor):
        return w
    return Variable("constant", np.shape(w), str(np.asarray(w).dtype), initializer=np.asarray(w), trainable=False)


# --- Dense, matmul, activations --------------------------------------------------------------------
def dense(x, kernel, bias=None, activation=None, activation_params: dict | None = None, name: str | None = None):
    """``activation(x @ kernel + bias)`` over the last axis of x (any rank).

    Args:
        x: (..., in) tensor. kernel: (in, units) Variable or array. bias: (units,) or None.
        activation: None, a Keras activation name (fused; softmax runs as its own op), or a callable
            applied to the result. activation_params: parameters of a named activation.
        name: optional node name.

    Example:
        >>> dense(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), activation="relu").shape
        (2, 4)
    """
    fused, post = "linear", None
    if isinstance(activation, str) and activation in ACTIVATION_NAMES:
        fused = activation
    elif activation is not None:
        post = activation
    op = LinearOp(fused, _params(activation_params or {}))
    weights = [_weight(kernel)] + ([] if bias is None else [_weight(bias)])
    y = apply_op(op, [_tensor(x, _symbolic(x))], weights, name=name)
    if post is None:
        return y
    if isinstance(post, str):
        return softmax(y) if post == "softmax" else activation_fn(y, post, **(activation_params or {}))
    return post(y)


def matmul(a, b, name: str | None = None):
    """``a @ b`` with NumPy semantics. ``matmul(tensor, Variable)`` records a Dense op on that kernel."""
    if isinstance(a, KerasTensor) and isinstance(b, Variable) and len(b.shape) == 2 and a.ndim >= 1:
        return apply_op(LinearOp(), [a], [b], name=name)
    sym = _symbolic(a, b)
    a, b = _tensor(a, sym), _tensor(b, sym)
    from flexflow_keras.ops.dtype_rules import dtype_of

    if dtype_of(a) == "int8" and dtype_of(b) == "int8":  # Keras 3: int8 @ int8 accumulates and returns int32
        a, b = cast(a, "int32"), cast(b, "int32")
    return apply_op(MatMulOp(), [a, b], name=name)


def activation_fn(x, name: str, **params):
    """Apply the activation `name` (any `kernels.activations` name; "softmax"/"log_softmax" too)."""
    if name == "softmax":
        return softmax(x, **params)
    if name == "log_softmax":
        return log_softmax(x, **params)
    return apply_op(ActivationOp(name, _params(params)), [_tensor(x, _symbolic(x))])


activation = activation_fn  # the contract's name: ops.activation(x, name, **params)


def softmax(x, axis: int = -1, name: str | None = None):
    """Softmax along `axis`."""
    if _batch_second.is_stack(x):  # ops.stack(xs, axis=0) of batch-first tensors
        return _batch_second.along(x, lambda t, a: softmax(t, a, name), axis)
    return apply_op(SoftmaxOp(axis % _py_max(_ndim(x), 1)), [_tensor(x, _symbolic(x))], name=name)


def log_softmax(x, axis: int = -1, name: str | None = None):
    """Log-softmax along `axis`."""
    if _batch_second.is_stack(x):
        return _batch_second.along(x, lambda t, a: log_softmax(t, a, name), axis)
    return apply_op(LogSoftmaxOp(axis % _py_max(_ndim(x), 1)), [_tensor(x, _symbolic(x))], name=name)


def _named_activation(act_name: str, **defaults) -> Callable:
    def fn(x, **params):
        return activation_fn(x, act_name, **{**defaults, **params})
    fn.__name__ = act_name
    fn.__doc__ = f"The Keras `{act_name}` activation, element-wise (parameters: {defaults or 'none'})."
    return fn


relu = _named_activation("relu")
leaky_relu = _named_activation("leaky_relu")
relu6 = _named_activation("relu6")
elu = _named_activation("elu")
selu = _named_activation("selu")
gelu = _named_activation("gelu", approximate=True)  # keras.ops.gelu defaults to the tanh form
sigmoid = _named_activation("sigmoid")
hard_sigmoid = _named_activation("hard_sigmoid")
tanh = _named_activation("tanh")
softplus = _named_activation("softplus")
softsign = _named_activation("softsign")
silu = _named_activation("silu")
swish = silu
hard_silu = _named_activation("hard_silu")
hard_swish = hard_silu
log_sigmoid = _named_activation("log_sigmoid")
mish = _named_activation("mish")
celu = _named_activation("celu")
hard_tanh = _named_activation("hard_tanh")


# --- layers' ops ---------------------------------------------------------------------------------
def dropout(x, rate: float, seed: int = 0, noise_shape=None, training: bool | None = None,
            name: str | None = None):
    """Inverted dropout (training) or identity (inference: ctx.training False).

    Args:
        x: tensor. rate: in [0, 1). seed: the op's seed. noise_shape: Keras' noise_shape (None: x's).
        training: eager calls: apply the mask; None takes the enclosing layer call's mode (inference
            outside any). Symbolic calls follow the execution's mode, except True given where the calls
            around do not train (`layers.node.forces_training`): the mask applies in inference too.
    """
    ns = None if noise_shape is None else tuple(None if s is None else int(s) for s in noise_shape)
    sym = _symbolic(x)
    op = DropoutOp(float(rate), int(seed), ns, always=sym and _forces_training(training))
    return apply_op(op, [_tensor(x, sym)], name=name, training=False if sym else _eager_training(training),
                    seed=0)


def batch_norm(x, gamma, beta, moving_mean, moving_variance, axis: int = -1, momentum: float = 0.99,
               epsilon: float = 1e-3, training: bool | None = None, name: str | None = None, mask=None):
    """Batch normalisation; gamma/beta None when the layer has scale/center off.

    Args:
        x: tensor. gamma, beta: (C,) Variables or None. moving_mean, moving_variance: (C,) Variables.
        axis: the channel axis. momentum, epsilon: Keras' (0.99, 1e-3).
        training: None follows the execution's mode (eager calls: the enclosing layer call's mode); False
            always uses the moving statistics (a frozen layer).
        mask: None, or a mask over every axis of x but the last (the channel axis): the batch statistics
            are over the unmasked positions (Keras 3).
    """
    c = moving_mean.shape[0]
    dtype = moving_mean.dtype
    g = gamma if gamma is not None else Variable("gamma_const", (c,), dtype, np.ones(c), trainable=False)
    b = beta if beta is not None else Variable("beta_const", (c,), dtype, np.zeros(c), trainable=False)
    op = BatchNormOp(axis % _ndim(x), float(epsilon), float(momentum), beta is not None, gamma is not None,
                     False if training is False else None, mask is not None)
    sym = _symbolic(x) or _symbolic(mask)
    inputs = [_tensor(x, sym)]
    if mask is not None:
        m = _tensor(mask, sym)
        inputs.append((cast(m, str(x.dtype)) if str(m.dtype) != str(x.dtype) else m) if sym else
                      np.asarray(m).astype(str(np.asarray(x).dtype)))
    return apply_op(op, inputs, [g, b, moving_mean, moving_variance], name=name,
                    training=False if sym else _eager_training(training))


def layer_norm(x, gamma=None, beta=None, axis=-1, epsilon: float = 1e-3, name: str | None = None):
    """Layer normalisation over `axis` (an int or the trailing axes as a sequence).

    Raises:
        ShapeError: when the axes are not the trailing ones.
    """
    from flexflow_keras.errors import ShapeError

    nd = _ndim(x)
    axes = normalize_axes(axis, nd)
    if not axes or axes != tuple(range(nd - len(axes), nd)) or 0 in axes:
        raise ShapeError(f"layer_norm normalises trailing non-batch axes, received axis={axis} for a {nd}-D "
                         f"input; use axis=-1 or e.g. axis=[1, 2, 3] for all of a 4-D input's features.")
    weights = [w for w in (gamma, beta) if w is not None]
    op = LayerNormOp(len(axes), float(epsilon), beta is not None, gamma is not None)
    return apply_op(op, [_tensor(x, _symbolic(x))], weights, name=name)


def embedding(ids, table, name: str | None = None):
    """``table[ids]``: ids an integer tensor, table a (V, D) Variable or array."""
    return apply_op(EmbeddingOp(), [_tensor(ids, _symbolic(ids))], [_weight(table)], name=name)


# --- element-wise --------------------------------------------------------------------------------
def _is_number(v) -> bool:
    return isinstance(v, int | float | np.number) and not isinstance(v, bool)


def _same_dtype_scalar(v, other) -> bool:
    """A 0-d array next to a symbolic tensor of its dtype (``tf.cast(tf.shape(y)[1], "int64") * ones``): an
    attribute, as a number is, rather than a constant recorded in the graph (the same result: no promotion)."""
    return (type(v) is not bool and isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "iuf"
            and isinstance(other, KerasTensor) and np.dtype(other.dtype) == v.dtype)


def _keras_operands(fn: str, a, b, sym: bool) -> tuple:
    """(a, b) as the op's inputs, cast to the dtype Keras 3 computes ``fn(a, b)`` in (`dtype_rules.result_type`:
    an int tensor with a float32 one is float32, where NumPy says float64), true division of ints in float32.
    Numbers (NumPy scalars too, as `_binary` takes them) are weak and stay numbers; a list takes TensorFlow's
    dtype (Python floats float32); in a graph an array is the constant it becomes (float64 narrowed)."""
    from flexflow_keras.ops.dtype_rules import _FLOATS, dtype_of, python_dtype, result_type

    def prep(v):
        if _is_number(v) or isinstance(v, bool) or v is None:
            return v
        if isinstance(v, list | tuple):
            v = np.asarray(v, python_dtype(v))
        return _tensor(v, sym) if sym else v

    def weak(v):
        return (float(v) if isinstance(v, float | np.floating) else int(v)) if _is_number(v) else v

    a, b = prep(a), prep(b)
    kinds = [np.asarray(v).dtype.kind for v in (a, b) if not _is_number(v) and not isinstance(v, KerasTensor | Variable)]
    if any(k not in "biuf" for k in kinds):
        return a, b  # strings, objects: the op says what is wrong
    dtype = result_type(weak(a), weak(b))
    if fn == "divide" and dtype not in _FLOATS:
        dtype = "float32"
    return tuple(v if _is_number(v) or isinstance(v, bool) or v is None or dtype_of(v) == dtype else cast(v, dtype)
                 for v in (a, b))


def _binary(fn: str, a, b, name=None):
    # A Python number next to a tensor is an attribute (weakly typed: float32 stays float32, as Keras).
    sym = _symbolic(a, b)
    if _same_dtype_scalar(b, a):
        b = b.item()
    elif _same_dtype_scalar(a, b):
        a = a.item()
    a, b = _keras_operands(fn, a, b, sym)
    if _is_number(b) and not _is_number(a):
        return apply_op(ScalarOp(fn, float(b), False), [_tensor(a, sym)], name=name)
    if _is_number(a) and not _is_number(b):
        return apply_op(ScalarOp(fn, float(a), True), [_tensor(b, sym)], name=name)
    return apply_op(BINARY_OPS[fn](), [_tensor(a, sym), _tensor(b, sym)], name=name)


def _forces_training(training) -> bool:
    from flexflow_keras.layers.node import forces_training

    return forces_training(training)


def _eager_training(training: bool | None) -> bool:
    """An eager call's mode: `training` when given, else the layers' current call mode (False outside)."""
    if training is not None:
        return bool(training)
    from flexflow_keras.layers.node import current_training

    return bool(current_training())


def add(a, b, name: str | None = None):
    """``a + b`` with broadcasting."""
    return _binary("add", a, b, name)


def subtract(a, b, name: str | None = None):
    """``a - b`` with broadcasting."""
    return _binary("subtract", a, b, name)


def multiply(a, b, name: str | None = None):
    """``a * b`` with broadcasting."""
    return _binary("multiply", a, b, name)


def divide(a, b, name: str | None = None):
    """``a / b`` with broadcasting."""
    return _binary("divide", a, b, name)


true_divide = divide


def maximum(a, b, name: str | None = None):
    """Element-wise maximum (the gradient goes to a where a >= b)."""
    return _binary("maximum", a, b, name)


def minimum(a, b, name: str | None = None):
    """Element-wise minimum (the gradient goes to a where a <= b)."""
    return _binary("minimum", a, b, name)


def power(a, b, name: str | None = None):
    """``a ** b`` with broadcasting."""
    return _binary("power", a, b, name)


def _unary(fn: str, x, lo: float = 0.0, hi: float = 0.0, name=None):
    return apply_op(UnaryOp(fn, float(lo), float(hi)), [_tensor(x, _symbolic(x))], name=name)


def _make_unary(fn: str) -> Callable:
    def f(x, name: str | None = None):
        return _unary(fn, x, name=name)
    f.__name__ = fn
    f.__doc__ = f"Element-wise `{fn}`."
    return f


negative = _make_unary("negative")
square = _make_unary("square")
sqrt = _make_unary("sqrt")
exp = _make_unary("exp")
log = _make_unary("log")
abs = _make_unary("abs")  # noqa: A001 - the Keras ops name
absolute = abs
sign = _make_unary("sign")
reciprocal = _make_unary("reciprocal")
log1p = _make_unary("log1p")
expm1 = _make_unary("expm1")
sin = _make_unary("sin")
cos = _make_unary("cos")
floor = _make_unary("floor")
ceil = _make_unary("ceil")
round = _make_unary("round")  # noqa: A001
rsqrt = _make_unary("rsqrt")
# a node of its own equal to x (ops.copy, tf.identity); keras.ops.identity(n) is the identity matrix (numpy_api)
_identity = _make_unary("identity")


def clip(x, x_min, x_max, name: str | None = None):
    """Clip to [x_min, x_max] (the gradient passes on the closed interval); integers stay integers."""
    if not _symbolic(x) and np.asarray(x).dtype.kind in "iub" and not _tape.recording():
        from flexflow_keras.ops.eager_tensor import eager

        a = np.asarray(x)
        return eager(np.clip(a, x_min, x_max).astype(a.dtype))
    return _unary("clip", x, x_min, x_max, name)


def stop_gradient(x, name: str | None = None):
    """The identity, with no gradient flowing back."""
    return apply_op(StopGradientOp(), [_tensor(x, _symbolic(x))], name=name)


def cast(x, dtype, name: str | None = None):
    """``x`` converted to `dtype`."""
    return apply_op(CastOp(str(np.dtype(dtype))), [_tensor(x, _symbolic(x))], name=name)


def _compare(fn: str, a, b, name=None):
    sym = _symbolic(a, b)
    return apply_op(CompareOp(fn), [_tensor(a, sym), _tensor(b, sym)], name=name)


def equal(a, b, name: str | None = None):
    """``a == b`` (bool)."""
    return _compare("equal", a, b, name)


def not_equal(a, b, name: str | None = None):
    """``a != b`` (bool)."""
    return _compare("not_equal", a, b, name)


def greater(a, b, name: str | None = None):
    """``a > b`` (bool)."""
    return _compare("greater", a, b, name)


def greater_equal(a, b, name: str | None = None):
    """``a >= b`` (bool)."""
    return _compare("greater_equal", a, b, name)


def less(a, b, name: str | None = None):
    """``a < b`` (bool)."""
    return _compare("less", a, b, name)


def less_equal(a, b, name: str | None = None):
    """``a <= b`` (bool)."""
    return _compare("less_equal", a, b, name)


def logical_and(a, b, name: str | None = None):
    """``a and b`` element-wise (bool)."""
    return _compare("logical_and", a, b, name)


def logical_or(a, b, name: str | None = None):
    """``a or b`` element-wise (bool)."""
    return _compare("logical_or", a, b, name)


def _keras_common_dtype(values, sym: bool) -> list:
    """`values` as tensors of Keras 3's result dtype when their numeric dtypes differ (float32 with int64 is
    float32, float16 with int32 float16; NumPy's promotion would give float64); other mixes unchanged."""
    from flexflow_keras.ops import dtype_rules

    ts = [_tensor(v, sym) for v in values]
    names = {dtype_rules.dtype_of(t) for t in ts}
    numeric = all(n in dtype_rules._FLOATS or (n != "bfloat16" and np.dtype(n).kind in "biu") for n in names)
    if len(names) <= 1 or not numeric:
        return ts
    dtype = dtype_rules.result_type(*values)
    return [t if dtype_rules.dtype_of(t) == dtype else cast(t, dtype) for t in ts]


def where(condition, x1, x2, name: str | None = None):
    """``condition ? x1 : x2`` with broadcasting, in Keras' result dtype of x1 and x2."""
    sym = _symbolic(condition, x1, x2)
    a, b = _keras_common_dtype([x1, x2], sym)
    return apply_op(WhereOp(), [_tensor(condition, sym), a, b], name=name)


# --- reductions and data movement ----------------------------------------------------------------
def _reduce(fn: str, x, axis, keepdims: bool, name=None):
    if _batch_second.is_stack(x):  # ops.stack(xs, axis=0) of batch-first tensors
        return _batch_second.along(x, lambda t, a: _reduce(fn, t, a, keepdims, name), axis, keepdims)
    try:
        axes = normalize_axes(axis, _ndim(x))
    except ValueError as e:
        from flexflow_keras.errors import ShapeError

        raise ShapeError(f"{fn}: {e}") from None
    return apply_op(ReduceOp(fn, axes, bool(keepdims)), [_tensor(x, _symbolic(x))], name=name)


def sum(x, axis=None, keepdims: bool = False, name: str | None = None):  # noqa: A001
    """Sum over `axis` (None: all; reducing axis 0 leaves no batch dim)."""
    return _reduce("sum", x, axis, keepdims, name)


def mean(x, axis=None, keepdims: bool = False, name: str | None = None):
    """Mean over `axis`."""
    return _reduce("mean", x, axis, keepdims, name)


def max(x, axis=None, keepdims: bool = False, name: str | None = None):  # noqa: A001
    """Maximum over `axis` (ties share the gradient)."""
    return _reduce("max", x, axis, keepdims, name)


def min(x, axis=None, keepdims: bool = False, name: str | None = None):  # noqa: A001
    """Minimum over `axis` (ties share the gradient)."""
    return _reduce("min", x, axis, keepdims, name)


def reshape(x, shape: Sequence[int | None], name: str | None = None):
    """Reshape to the full target `shape`; for symbolic x it starts with -1 (or None) for the batch."""
    target = tuple(None if s is None else int(s) for s in shape)
    return apply_op(ReshapeOp(target), [_tensor(x, _symbolic(x))], name=name)


def expand_dims(x, axis: int, name: str | None = None):
    """Insert a dim of size 1 at `axis` (of ``ops.shape(y)[0]``: a shape vector, ops/dynamic_dims.py)."""
    if getattr(x, "_is_dim", False):
        from flexflow_keras.ops import dynamic_dims

        return dynamic_dims.vector([x])
    if not isinstance(x, KerasTensor | Variable) and not hasattr(x, "shape"):  # a list or a Python number
        from flexflow_keras.ops.dtype_rules import dtype_of

        x = np.asarray(x, dtype=dtype_of(x))  # Keras' tensor of it: int32, float32 or bool
    shape = list(x.shape)
    axis = axis % (len(shape) + 1)
    if isinstance(x, KerasTensor) and None in shape[1:]:  # open sizes: a reshape could not say which is which
        from flexflow_keras.ops.dynamic_dims import InsertAxisOp

        return apply_op(InsertAxisOp(axis), [x], name=name)
    shape.insert(axis, 1)
    return reshape(x, [-1 if i == 0 and s is None else s for i, s in enumerate(shape)], name)


def squeeze(x, axis=None, name: str | None = None):
    """Remove dims of size 1 (all of them, or `axis`)."""
    shape = tuple(np.shape(x)) if not isinstance(x, KerasTensor | Variable) else tuple(x.shape)
    sym = isinstance(x, KerasTensor)
    axes = normalize_axes(axis, len(shape)) if axis is not None else tuple(
        i for i, s in enumerate(shape) if s == 1 and (i > 0 or not sym))  # a symbolic batch dim stays
    kept = [-1 if i == 0 and s is None else s for i, s in enumerate(shape) if i not in axes]
    return reshape(x, kept, name)


def transpose(x, axes: Sequence[int] | None = None, name: str | None = None):
    """Permute the dims (all of them, the batch included; None reverses them)."""
    from flexflow_keras.ops.numpy_api import BatchSecondStack

    if isinstance(x, BatchSecondStack):  # stack(xs, axis=0) of batch-first tensors, the batch put first again
        return x.transposed(tuple(reversed(range(len(x.shape)))) if axes is None else axes)
    nd = _ndim(x)
    perm = tuple(reversed(range(nd))) if axes is None else tuple(int(a) % nd for a in axes)
    return apply_op(TransposeOp(perm), [_tensor(x, _symbolic(x))], name=name)


def concatenate(xs: Sequence, axis: int = -1, name: str | None = None):
    """Join tensors along `axis` (shape vectors of ``ops.shape(y)`` dims: a longer one, ops/dynamic_dims.py)."""
    from flexflow_keras.ops import dynamic_dims

    if any(isinstance(x, dynamic_dims.ShapeVector) for x in xs):
        return dynamic_dims.vector(xs)
    sym = _symbolic(*xs)
    ts = _keras_common_dtype(list(xs), sym)
    return apply_op(ConcatOp(axis % _ndim(ts[0])), ts, name=name)
