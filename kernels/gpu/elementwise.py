"""CUDA twins of `kernels.elementwise`, and the strided-index machinery the other data kernels share.

Every kernel here walks the flat output and finds each operand's element through (shape, strides)
tuples, with stride 0 on broadcast dims, so broadcasting, transposes and reductions use one scheme.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from kernels.elementwise import (
    ABS,
    ADD,
    ARCTAN,
    CEIL,
    CLIP,
    COS,
    DIVIDE,
    ERF,
    ERFINV,
    EXP,
    EXPM1,
    FLOOR,
    IDENTITY,
    LOG,
    LOG1P,
    MAXIMUM,
    MINIMUM,
    MULTIPLY,
    NEGATIVE,
    RECIPROCAL,
    ROUND,
    RSQRT,
    SIGN,
    SIN,
    SQRT,
    SQUARE,
    SUBTRACT,
    ZERO_GRAD_UNARY,
    erfinv_scalar,
)
from kernels.gpu import empty, flat, launch, to_device
from kernels.gpu.scalar_source import device_function, float32_constants

_erfinv = device_function(erfinv_scalar)  # the CPU's formula; float32 data stays in float32 instructions

SCALE = 100  # v * lo: a GPU-internal unary code for scaled copies
(EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL, LOGICAL_AND, LOGICAL_OR) = range(10, 18)
COMPARE_CODES = {"equal": EQUAL, "not_equal": NOT_EQUAL, "greater": GREATER, "greater_equal": GREATER_EQUAL,
                 "less": LESS, "less_equal": LESS_EQUAL, "logical_and": LOGICAL_AND, "logical_or": LOGICAL_OR}


@cuda.jit(device=True)
def offset(i, shape, strides):
    """Element offset of flat index `i` of `shape` in an operand with element `strides`."""
    off = 0
    rem = i
    for d in range(len(shape) - 1, -1, -1):
        off += (rem % shape[d]) * strides[d]
        rem //= shape[d]
    return off


@cuda.jit(device=True)
@float32_constants
def binary_value(code, a, b):
    if code == ADD:
        return a + b
    if code == SUBTRACT:
        return a - b
    if code == MULTIPLY:
        return a * b
    if code == DIVIDE:
        return a / b
    if code == MAXIMUM:
        return max(a, b)
    if code == MINIMUM:
        return min(a, b)
    if code == EQUAL:
        return 1.0 if a == b else 0.0
    if code == NOT_EQUAL:
        return 1.0 if a != b else 0.0
    if code == GREATER:
        return 1.0 if a > b else 0.0
    if code == GREATER_EQUAL:
        return 1.0 if a >= b else 0.0
    if code == LESS:
        return 1.0 if a < b else 0.0
    if code == LESS_EQUAL:
        return 1.0 if a <= b else 0.0
    if code == LOGICAL_AND:
        return 1.0 if a != 0 and b != 0 else 0.0
    if code == LOGICAL_OR:
        return 1.0 if a != 0 or b != 0 else 0.0
    return a ** b  # POWER


@cuda.jit(device=True)
@float32_constants
def binary_partial(code, which, a, b, y):
    # d(a op b)/da (which == 0) or /db (which == 1); TF's tie rules for maximum / minimum.
    if code == ADD:
        return 1.0
    if code == SUBTRACT:
        return 1.0 if which == 0 else -1.0
    if code == MULTIPLY:
        return b if which == 0 else a
    if code == DIVIDE:
        return 1.0 / b if which == 0 else -y / b
    if code == MAXIMUM:
        return (1.0 if a >= b else 0.0) if which == 0 else (1.0 if a < b else 0.0)
    if code == MINIMUM:
        return (1.0 if a <= b else 0.0) if which == 0 else (1.0 if a > b else 0.0)
    if which == 0:
        return b * a ** (b - 1.0)
    return y * math.log(a) if a > 0 else 0.0


@cuda.jit(device=True)
@float32_constants
def unary_value(code, x, lo, hi):
    if code == NEGATIVE:
        return -x
    if code == SQUARE:
        return x * x
    if code == SQRT:
        return math.sqrt(x)
    if code == EXP:
        return math.exp(x)
    if code == LOG:
        return math.log(x)
    if code == ABS:
        return abs(x)
    if code == SIGN:
        return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)
    if code == RECIPROCAL:
        return 1.0 / x
    if code == LOG1P:
        return math.log1p(x)
    if code == EXPM1:
        return math.expm1(x)
    if code == SIN:
        return math.sin(x)
    if code == COS:
        return math.cos(x)
    if code == FLOOR:  # x - x mod 1 (Python's mod: non-negative): math.floor would return an int64
        return x - x % 1.0
    if code == CEIL:
        return x + (-x) % 1.0
    if code == ROUND:
        r = (x + 0.5) - (x + 0.5) % 1.0
        return r - 1.0 if r - x == 0.5 and r % 2.0 != 0.0 else r  # half to even, as np.rint
    if code == RSQRT:
        return 1.0 / math.sqrt(x)
    if code == ARCTAN:
        return math.atan(x)
    if code == ERF:
        return math.erf(x)
    if code == ERFINV:
        return _erfinv(x)
    if code == CLIP:
        return min(max(x, lo), hi)
    if code == SCALE:
        return x * lo
    return x  # IDENTITY, STOP_GRADIENT


@cuda.jit(device=True)
@float32_constants
def unary_partial(code, x, y, lo, hi):
    if code == NEGATIVE:
        return -1.0
    if code == SQUARE:
        return 2.0 * x
    if code == SQRT:
        return 0.5 / y
    if code == EXP:
        return y
    if code == LOG:
        return 1.0 / x
    if code == ABS:
        return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)
    if code == RECIPROCAL:
        return -y * y
    if code == LOG1P:
        return 1.0 / (1.0 + x)
    if code == EXPM1:
        return y + 1.0
    if code == SIN:
        return math.cos(x)
    if code == COS:
        return -math.sin(x)
    if code == RSQRT:
        return -0.5 * y * y * y
    if code == ARCTAN:
        return 1.0 / (1.0 + x * x)
    if code == ERF:
        return 1.1283791670955126 * math.exp(-x * x)  # 2 / sqrt(pi)
    if code == ERFINV:
        return 0.886226925452758 * math.exp(y * y)  # sqrt(pi) / 2
    if code == CLIP:
        return 1.0 if lo <= x <= hi else 0.0
    return 1.0  # IDENTITY


@cuda.jit
def _binary(a, b, y, shape, sa, sb, code, accumulate):
    i = cuda.grid(1)
    if i < y.size:
        v = binary_value(code, a[offset(i, shape, sa)], b[offset(i, shape, sb)])
        y[i] = y[i] + v if accumulate else v


@cuda.jit
def _compare(a, b, y, shape, sa, sb, code):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = binary_value(code, a[offset(i, shape, sa)], b[offset(i, shape, sb)]) != 0.0


@cuda.jit
def _binary_grad(a, b, y, dy, g, shape, sa, sb, code, which):
    i = cuda.grid(1)
    if i < g.size:
        g[i] = dy[i] * binary_partial(code, which, a[offset(i, shape, sa)], b[offset(i, shape, sb)], y[i])


@cuda.jit
def _unary(x, y, shape, sx, code, lo, hi, accumulate):
    i = cuda.grid(1)
    if i < y.size:
        v = unary_value(code, x[offset(i, shape, sx)], lo, hi)
        y[i] = y[i] + v if accumulate else v


@cuda.jit
def _unary_grad(x, y, dy, dx, code, lo, hi, accumulate):
    i = cuda.grid(1)
    if i < dx.size:
        g = dy[i]
        # sqrt and rsqrt pass a zero upstream gradient as zero at x = 0 (as TensorFlow), not 0 * inf
        if g == 0 and (code == SQRT or code == RSQRT):
            v = g  # zero, in dx's dtype
        else:
            v = g * unary_partial(code, x[i], y[i], lo, hi)
        dx[i] = dx[i] + v if accumulate else v


@cuda.jit
@float32_constants
def _where(c, a, b, y, shape, sc, sa, sb, pick, accumulate):
    # pick 0: y = c ? a : b; pick 1: y = c ? a : 0 (grad of a); pick 2: y = c ? 0 : b (grad of b).
    i = cuda.grid(1)
    if i < y.size:
        cond = c[offset(i, shape, sc)] != 0
        if pick == 0:
            v = a[offset(i, shape, sa)] if cond else b[offset(i, shape, sb)]
        elif pick == 1:
            v = a[offset(i, shape, sa)] if cond else 0.0
        else:
            v = 0.0 if cond else b[offset(i, shape, sb)]
        y[i] = y[i] + v if accumulate else v


def contiguous_strides(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(tuple(shape)):
        out.append(acc)
        acc *= int(s)
    return tuple(reversed(out))


def broadcast_strides(shape, out_shape) -> tuple[int, ...]:
    """Element strides that read a contiguous `shape` broadcast to `out_shape` (0 on broadcast dims)."""
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    cs = contiguous_strides(shape)
    return tuple(0 if s == 1 and o != 1 else st for s, o, st in zip(shape, out_shape, cs, strict=True))


def operand(a, dtype=None):
    """A flat device operand from a device array, a host array or a Python scalar."""
    if hasattr(a, "copy_to_host"):
        return a
    return to_device(np.asarray(a, dtype=dtype).reshape(-1) if np.ndim(a) else np.asarray([a], dtype=dtype))


def _shape_of(a):
    return tuple(a.shape) if hasattr(a, "copy_to_host") else np.shape(a)


def _out_shape(y):
    return tuple(y.shape) or (1,)


def binary_forward_cuda(code: int, a, b, y) -> None:
    """``y = a (op) b`` with broadcasting on device arrays (a or b may be host scalars)."""
    shape = _out_shape(y)
    launch(_binary, y.size, flat(operand(a, y.dtype)), flat(operand(b, y.dtype)), flat(y), shape,
           broadcast_strides(_shape_of(a), shape), broadcast_strides(_shape_of(b), shape), code, False)


def compare_forward_cuda(name: str, a, b, y) -> None:
    """``y = a (cmp) b`` into a bool device array."""
    shape = _out_shape(y)
    launch(_compare, y.size, flat(operand(a)), flat(operand(b)), flat(y), shape,
           broadcast_strides(_shape_of(a), shape), broadcast_strides(_shape_of(b), shape), COMPARE_CODES[name])


def binary_backward_cuda(code: int, a, b, y, dy, da, db, accumulate: tuple[bool, bool] = (False, False)) -> None:
    """Gradients of `binary_forward_cuda`, reduced to the operands' shapes (None: not wanted). An operand or
    output the op's backward does not read may be None (`Op.backward_reads`: add and subtract read
    neither operand, multiply not the output): `dy` stands in for it, read by no partial of those ops."""
    from kernels.gpu.reduce import sum_to_shape_cuda

    shape = _out_shape(dy)
    a, b, y = (dy if v is None else v for v in (a, b, y))
    fa, fb = flat(operand(a, dy.dtype)), flat(operand(b, dy.dtype))
    sa, sb = broadcast_strides(_shape_of(a), shape), broadcast_strides(_shape_of(b), shape)
    for which, buf, acc in ((0, da, accumulate[0]), (1, db, accumulate[1])):
        if buf is not None:
            g = empty(shape, dy.dtype)
            launch(_binary_grad, dy.size, fa, fb, flat(y), flat(dy), flat(g), shape, sa, sb, code, which)
            sum_to_shape_cuda(g, buf, acc)


def unary_forward_cuda(code: int, x, y, lo: float = 0.0, hi: float = 0.0) -> None:
    """``y = f(x)`` for a `kernels.elementwise.UNARY` code on device arrays."""
    shape = _out_shape(y)
    launch(_unary, y.size, flat(x), flat(y), shape, contiguous_strides(shape), code, lo, hi, False)


def unary_backward_cuda(code: int, x, y, dy, dx, lo: float = 0.0, hi: float = 0.0,
                        accumulate: bool = False) -> None:
    """``dx (+)= dy * f'(x)`` on device arrays."""
    if code in ZERO_GRAD_UNARY:
        if not accumulate:
            strided_copy_cuda(operand(np.zeros(1, dx.dtype)), dx, (0,) * len(_out_shape(dx)), scale=0.0)
        return
    launch(_unary_grad, dx.size, flat(x), flat(y), flat(dy), flat(dx), code, lo, hi, accumulate)


def strided_copy_cuda(src, y, src_strides, accumulate: bool = False, scale: float | None = None) -> None:
    """``y (+)= src[strided]`` (times `scale` when given): transposes, broadcasts, reshapes."""
    shape = _out_shape(y)
    code, lo = (IDENTITY, 0.0) if scale is None else (SCALE, float(scale))
    launch(_unary, y.size, flat(src), flat(y), shape, tuple(src_strides), code, lo, 0.0, accumulate)


def cast_forward_cuda(x, y) -> None:
    """``y = x`` converted to y's dtype on device arrays."""
    strided_copy_cuda(x, y, contiguous_strides(_out_shape(y)))


def cast_backward_cuda(dy, dx, accumulate: bool = False) -> None:
    """The gradient of a cast: dy converted back."""
    strided_copy_cuda(dy, dx, contiguous_strides(_out_shape(dx)), accumulate)


def where_forward_cuda(cond, a, b, y) -> None:
    """``y = cond ? a : b`` with broadcasting on device arrays."""
    shape = _out_shape(y)
    launch(_where, y.size, flat(operand(cond)), flat(operand(a, y.dtype)), flat(operand(b, y.dtype)), flat(y),
           shape, broadcast_strides(_shape_of(cond), shape), broadcast_strides(_shape_of(a), shape),
           broadcast_strides(_shape_of(b), shape), 0, False)


def where_backward_cuda(cond, dy, da, db, accumulate: tuple[bool, bool] = (False, False)) -> None:
    """Gradients of `where_forward_cuda` w.r.t. a and b."""
    from kernels.gpu.reduce import sum_to_shape_cuda

    shape = _out_shape(dy)
    fc, fdy = flat(operand(cond)), flat(dy)
    cs = broadcast_strides(_shape_of(cond), shape)
    full = contiguous_strides(shape)
    for pick, buf, acc in ((1, da, accumulate[0]), (2, db, accumulate[1])):
        if buf is not None:
            g = empty(shape, dy.dtype)
            launch(_where, dy.size, fc, fdy, fdy, flat(g), shape, cs, full, full, pick, False)
            sum_to_shape_cuda(g, buf, acc)


