"""Element-wise and reduction ops: `BinaryOp` (NumPy broadcasting), `ScalarOp` (a Python number as an
attribute), `UnaryOp` (math and clip), `StopGradientOp`, `CompareOp`, `CastOp`, `WhereOp`, `ReduceOp`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import broadcast_shapes, fmt, kernel
from flexflow_keras.ops.base import Op
from flexflow_keras.ops.graph import TensorSpec
from kernels import elementwise as kew
from kernels import reduce as kred


def _is_float(dtype: str) -> bool:
    """Whether `dtype` is a floating dtype."""
    return np.dtype(dtype).kind == "f"


def _check_name(name: str, table, who: str) -> None:
    if name not in table:
        raise ValueError(f"{who}: unknown function {name!r}; valid: {sorted(table)}.")


class _Elementwise:
    """Parallel rule of element-wise ops: any output dim splits; inputs follow by broadcasting."""

    def parallel_space(self, inputs, weights):
        return par.elementwise_space(self, inputs, weights)


@dataclass(frozen=True)
class BinaryOp(_Elementwise, Op):
    """``y = a (fn) b`` for fn in add, subtract, multiply, divide, maximum, minimum, power (one subclass
    per fn, e.g. `AddOp`, so graphs name their nodes "add_12")."""

    type_name: ClassVar[str] = "binary"
    fn: str = "add"

    def __post_init__(self):
        _check_name(self.fn, kew.BINARY, "binary op")

    def output_specs(self, inputs, weights):
        if len(inputs) != 2:
            raise ShapeError(f"{self.fn} takes 2 inputs, received {len(inputs)}.")
        a, b = inputs
        shape = broadcast_shapes(a.shape, b.shape, self.fn)
        return (TensorSpec(shape, str(np.result_type(a.dtype, b.dtype))),)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(kew, "binary_forward", ctx)(kew.BINARY[self.fn], inputs[0], inputs[1], outputs[0])

    def backward_reads(self):
        if self.fn in ("add", "subtract"):
            return False, False  # the gradient alone, summed to each operand's shape
        if self.fn == "multiply":
            return True, False  # each operand's gradient is the other times dy
        return True, True  # divide and power read the output too

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        kernel(kew, "binary_backward", ctx)(kew.BINARY[self.fn], inputs[0], inputs[1], outputs[0], grad_outputs[0],
                                            grad_inputs[0], grad_inputs[1], (ctx.acc_input(0), ctx.acc_input(1)))


@dataclass(frozen=True)
class AddOp(BinaryOp):
    """``a + b``."""

    type_name: ClassVar[str] = "add"
    fn: str = "add"


@dataclass(frozen=True)
class SubtractOp(BinaryOp):
    """``a - b``."""

    type_name: ClassVar[str] = "subtract"
    fn: str = "subtract"


@dataclass(frozen=True)
class MultiplyOp(BinaryOp):
    """``a * b``."""

    type_name: ClassVar[str] = "multiply"
    fn: str = "multiply"


@dataclass(frozen=True)
class DivideOp(BinaryOp):
    """``a / b``."""

    type_name: ClassVar[str] = "divide"
    fn: str = "divide"


@dataclass(frozen=True)
class MaximumOp(BinaryOp):
    """Element-wise maximum."""

    type_name: ClassVar[str] = "maximum"
    fn: str = "maximum"


@dataclass(frozen=True)
class MinimumOp(BinaryOp):
    """Element-wise minimum."""

    type_name: ClassVar[str] = "minimum"
    fn: str = "minimum"


@dataclass(frozen=True)
class PowerOp(BinaryOp):
    """``a ** b``."""

    type_name: ClassVar[str] = "power"
    fn: str = "power"


BINARY_OPS: dict[str, type[BinaryOp]] = {c.fn: c for c in (AddOp, SubtractOp, MultiplyOp, DivideOp, MaximumOp,
                                                           MinimumOp, PowerOp)}


@dataclass(frozen=True)
class ScalarOp(_Elementwise, Op):
    """``y = x (fn) scalar`` (or ``scalar (fn) x`` when `reverse`), the scalar kept as an attribute."""

    type_name: ClassVar[str] = "scalar"
    fn: str = "add"
    scalar: float = 0.0
    reverse: bool = False

    def __post_init__(self):
        _check_name(self.fn, kew.BINARY, "scalar op")

    def output_specs(self, inputs, weights):
        if len(inputs) != 1:
            raise ShapeError(f"{self.fn} with a scalar takes 1 input, received {len(inputs)}.")
        x = inputs[0]
        dtype = x.dtype if _is_float(x.dtype) or float(self.scalar).is_integer() else "float32"
        if self.fn == "divide" and not _is_float(x.dtype):
            dtype = "float32"
        return (TensorSpec(x.shape, dtype),)

    def _operands(self, x, dtype):
        s = np.asarray(self.scalar, dtype=dtype)
        return (s, x) if self.reverse else (x, s)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        a, b = self._operands(inputs[0], outputs[0].dtype)
        kernel(kew, "binary_forward", ctx)(kew.BINARY[self.fn], a, b, outputs[0])

    def backward_reads(self):
        if self.fn in ("add", "subtract", "multiply") or (self.fn == "divide" and not self.reverse):
            return False, False  # dy, or dy times or over the scalar
        return True, True

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is None:
            return
        a, b = self._operands(inputs[0], grad_outputs[0].dtype)  # (the output's dtype)
        ga, gb = (None, grad_inputs[0]) if self.reverse else (grad_inputs[0], None)
        accs = (False, ctx.acc_input(0)) if self.reverse else (ctx.acc_input(0), False)
        kernel(kew, "binary_backward", ctx)(kew.BINARY[self.fn], a, b, outputs[0], grad_outputs[0], ga, gb, accs)


_UNARY_CODES = {**kew.UNARY, **kew.NON_NUMPY_UNARY}


@dataclass(frozen=True)
class UnaryOp(_Elementwise, Op):
    """``y = fn(x)`` for a `kernels.elementwise.UNARY` (or `NON_NUMPY_UNARY`) name; `clip` uses `lo`/`hi`."""

    type_name: ClassVar[str] = "unary"
    fn: str = "identity"
    lo: float = 0.0
    hi: float = 0.0

    def __post_init__(self):
        _check_name(self.fn, _UNARY_CODES, "unary op")

    def output_specs(self, inputs, weights):
        if len(inputs) != 1:
            raise ShapeError(f"{self.fn} takes 1 input, received {len(inputs)}.")
        x = inputs[0]
        needs_float = self.fn in ("sqrt", "exp", "log", "reciprocal", "log1p", "expm1", "sin", "cos", "rsqrt",
                                  "arctan", "erf", "erfinv")
        dtype = "float32" if needs_float and not _is_float(x.dtype) else x.dtype
        return (TensorSpec(x.shape, dtype),)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(kew, "unary_forward", ctx)(_UNARY_CODES[self.fn], inputs[0], outputs[0], self.lo, self.hi)

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(kew, "unary_backward", ctx)(_UNARY_CODES[self.fn], inputs[0], outputs[0], grad_outputs[0],
                                               grad_inputs[0], self.lo, self.hi, ctx.acc_input(0))


@dataclass(frozen=True)
class StopGradientOp(UnaryOp):
    """The identity, through which no gradient flows."""

    type_name: ClassVar[str] = "stop_gradient"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False,)
    fn: str = "stop_gradient"


@dataclass(frozen=True)
class CompareOp(_Elementwise, Op):
    """``y = a (cmp) b`` into bool (equal, not_equal, greater, ..., logical_and/or); no gradient."""

    type_name: ClassVar[str] = "compare"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False, False)
    fn: str = "equal"

    def __post_init__(self):
        _check_name(self.fn, kew.COMPARE, "comparison")

    def output_specs(self, inputs, weights):
        if len(inputs) != 2:
            raise ShapeError(f"{self.fn} takes 2 inputs, received {len(inputs)}.")
        return (TensorSpec(broadcast_shapes(inputs[0].shape, inputs[1].shape, self.fn), "bool"),)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(kew, "compare_forward", ctx)(self.fn, inputs[0], inputs[1], outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        """Comparisons have no gradient (their inputs are not differentiable)."""


@dataclass(frozen=True)
class CastOp(_Elementwise, Op):
    """``y = x`` converted to `dtype`; differentiable between float dtypes only."""

    type_name: ClassVar[str] = "cast"
    dtype: str = "float32"

    def __post_init__(self):
        object.__setattr__(self, "dtype", str(np.dtype(self.dtype)))

    def is_differentiable(self, i: int) -> bool:
        return _is_float(self.dtype)

    def output_specs(self, inputs, weights):
        if len(inputs) != 1:
            raise ShapeError(f"cast takes 1 input, received {len(inputs)}.")
        return (TensorSpec(inputs[0].shape, self.dtype),)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(kew, "cast_forward", ctx)(inputs[0], outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(kew, "cast_backward", ctx)(grad_outputs[0], grad_inputs[0], ctx.acc_input(0))


@dataclass(frozen=True)
class WhereOp(_Elementwise, Op):
    """``y = cond ? a : b`` with broadcasting; inputs (cond, a, b)."""

    type_name: ClassVar[str] = "where"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False, True, True)

    def output_specs(self, inputs, weights):
        if len(inputs) != 3:
            raise ShapeError(f"where takes 3 inputs (cond, a, b), received {len(inputs)}.")
        c, a, b = inputs
        shape = broadcast_shapes(broadcast_shapes(c.shape, a.shape, "where"), b.shape, "where")
        return (TensorSpec(shape, str(np.result_type(a.dtype, b.dtype))),)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(kew, "where_forward", ctx)(inputs[0], inputs[1], inputs[2], outputs[0])

    def backward_reads(self):
        return (True, False, False), False  # the condition routes dy to x or y

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        kernel(kew, "where_backward", ctx)(inputs[0], grad_outputs[0], grad_inputs[1], grad_inputs[2],
                                           (ctx.acc_input(1), ctx.acc_input(2)))


@dataclass(frozen=True)
class ReduceOp(Op):
    """sum / mean / max / min over `axes` (sorted, non-negative); `keepdims` as NumPy.

    Reducing over axis 0 (the batch) gives an output without a batch dim (`sample_dim` None).
    """

    type_name: ClassVar[str] = "reduce"
    fn: str = "sum"
    axes: tuple[int, ...] = ()
    keepdims: bool = False

    def __post_init__(self):
        _check_name(self.fn, kred.REDUCE, "reduction")

    def output_specs(self, inputs, weights):
        if len(inputs) != 1:
            raise ShapeError(f"{self.fn} takes 1 input, received {len(inputs)}.")
        x = inputs[0]
        if any(a >= x.ndim for a in self.axes):
            raise ShapeError(f"{self.fn}: axes {self.axes} out of range for input shape {fmt(x.shape)}.")
        if self.keepdims:
            shape = tuple(1 if i in self.axes else s for i, s in enumerate(x.shape))
        else:
            shape = tuple(s for i, s in enumerate(x.shape) if i not in self.axes)
        dtype = "float32" if self.fn == "mean" and not _is_float(x.dtype) else x.dtype
        return (TensorSpec(shape, dtype),)

    def sample_dim(self):
        return None if 0 in self.axes else 0

    def _kept(self, ndim: int) -> list[int]:
        """Per output dim, the input dim it comes from (-1: a reduced dim kept with size 1)."""
        if self.keepdims:
            return [-1 if d in self.axes else d for d in range(ndim)]
        return [d for d in range(ndim) if d not in self.axes]

    def parallel_space(self, inputs, weights):
        kept = self._kept(inputs[0].ndim)
        return par.space_except(self, inputs, weights, [i for i, d in enumerate(kept) if d < 0],
                                f"{self.fn} reduces over this dim")

    def tile(self, shapes, out_box, part=0, parts=1):
        return par.reduction_tile(shapes, out_box, self._kept(len(shapes.inputs[0])))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(kred, "reduce_forward", ctx)(kred.REDUCE[self.fn], inputs[0], self.axes, outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(kred, "reduce_backward", ctx)(kred.REDUCE[self.fn], inputs[0], outputs[0], self.axes,
                                                 grad_outputs[0], grad_inputs[0], ctx.acc_input(0))
