"""Backward as ops: each rule here writes an op's input and weight gradients as eager ops (`apply_op`
calls that the open tapes record, each with its own backward kernels), so that a gradient taken while
another tape records is itself differentiable: WGAN-GP's gradient penalty, a PINN's d2u/dx2.

`GradientTape.gradient` uses a rule only when another tape (or the same persistent one) records; an
ordinary gradient runs the ops' own backward kernels (ops/tape.py). A rule is registered per op class
(`rule_for` walks the class's bases); an op without one, or a rule that meets a case it does not cover,
raises `NotTwiceDifferentiable`, and the tape then runs the kernels and marks their result, so that only a
target that really depends on the missing second-order term is an error naming the op.

A rule reads the values the forward read and wrote (`Args`): inputs, weights and outputs are the recorded
buffers (a Variable's copy is known to the tapes by the Variable's own key, ops/tape.py), the output
gradients are recorded values too; masks (ReLU's, dropout's, max's ties) enter as constants, whose
derivative is zero almost everywhere, as in TensorFlow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import GraphError
from flexflow_keras.ops import array_ops as ar
from flexflow_keras.ops import math_ops as mo
from flexflow_keras.ops import nn_ops as nn
from flexflow_keras.ops import shape_ops as so
from flexflow_keras.ops.base import Op, apply_op
from flexflow_keras.ops.graph import TensorSpec
from kernels import activation_loops
from kernels import activations as kact

_RULES: dict[type, Callable] = {}


class NotTwiceDifferentiable(GraphError):
    """An op (or one case of it) whose backward has no form as differentiable ops."""


@dataclass
class Args:
    """What a rule reads: the forward's values, the output gradients, which gradients are wanted."""

    op: Op
    inputs: list
    weights: list
    outs: list
    saved: list
    gouts: list
    need_in: list  # per input: whether its gradient is wanted
    need_w: list  # per weight
    training: bool


def rule(*classes):
    """Register the decorated function as the backward-as-ops rule of `classes` (and their subclasses)."""

    def deco(fn):
        for c in classes:
            _RULES[c] = fn
        return fn

    return deco


def rule_for(op) -> Callable | None:
    """The rule of `op`'s class (or of its nearest registered base), or None."""
    for c in type(op).__mro__:
        if c in _RULES:
            return _RULES[c]
    return None


def unsupported(what: str):
    raise NotTwiceDifferentiable(what)


# --- small op helpers (each one recorded) ------------------------------------------------------------
def _op(op, *xs, weights=()):
    return apply_op(op, list(xs), list(weights))


def mul(a, b):
    return _op(mo.MultiplyOp(), a, b)


def add(a, b):
    return _op(mo.AddOp(), a, b)


def sub(a, b):
    return _op(mo.SubtractOp(), a, b)


def div(a, b):
    return _op(mo.DivideOp(), a, b)


def scal(fn: str, x, s: float, reverse: bool = False):
    return _op(mo.ScalarOp(fn, float(s), reverse), x)


def un(fn: str, x):
    return _op(mo.UnaryOp(fn), x)


def act(name: str, x):
    return _op(nn.ActivationOp(name), x)


def const_like(value, like) -> np.ndarray:
    """A constant (not recorded) of `like`'s dtype."""
    return np.asarray(value, dtype=np.asarray(like).dtype)


def mul_const(g, c):
    return mul(g, const_like(c, g))


def mask_of(c, v):
    """The constant `c` (a mask or a piecewise-constant derivative read from `v`'s values) as a value that
    depends on `v` with a zero derivative: a target then reaches `v`'s sources with zeros, not None, as
    TensorFlow's gradient of a ReLU's gradient gives a bias zeros."""
    return add(scal("multiply", un("sign", v), 0.0), const_like(c, v))


def reshape(x, shape):
    shape = tuple(int(s) for s in shape)
    if tuple(np.shape(x)) == shape:
        return x
    return _op(so.ReshapeOp(shape), x)


def transpose(x, perm):
    return _op(so.TransposeOp(tuple(int(p) for p in perm)), x)


def swap_last(x):
    n = np.ndim(x)
    return transpose(x, tuple(range(n - 2)) + (n - 1, n - 2))


def matmul(a, b):
    return _op(nn.MatMulOp(), a, b)


def reduce_sum(x, axes, keepdims=False):
    axes = tuple(sorted(int(a) % max(np.ndim(x), 1) for a in axes))
    if not axes:
        return x
    return _op(mo.ReduceOp("sum", axes, bool(keepdims)), x)


def sum_to(g, shape):
    """`g` summed down to `shape` (broadcasting in reverse), as ops."""
    shape = tuple(shape)
    gs = tuple(np.shape(g))
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and gs[lead + i] != 1)
    return reshape(reduce_sum(g, axes), shape)


def broadcast_to(x, shape):
    shape = tuple(int(s) for s in shape)
    if tuple(np.shape(x)) == shape:
        return x
    return _op(ar.BroadcastToOp(shape), x)


def where(cond, a, b):
    return _op(mo.WhereOp(), np.asarray(cond, bool), a, b)


# --- activations --------------------------------------------------------------------------------------
# piecewise-linear activations: the derivative is a constant almost everywhere (the kernels' own)
_PIECEWISE_LINEAR = frozenset({kact.LINEAR, kact.RELU, kact.LEAKY_RELU, kact.RELU6, kact.HARD_SIGMOID,
                               kact.HARD_TANH, kact.SOFT_SHRINK, kact.HARD_SHRINK, kact.SPARSE_SIGMOID,
                               kact.THRESHOLD})


def activation_grad(a: kact.Activation, name: str, g, y, z_value, z_op: Callable):
    """``g * act'(z)`` as ops. `y` the recorded output, `z_value` the pre-activation's values (None when the
    op did not keep it), `z_op()` the pre-activation as a recorded value (computed only when needed)."""
    c = a.code
    if c == kact.LINEAR:
        return g
    if c in _PIECEWISE_LINEAR:
        y_ = np.asarray(y)
        factor = np.empty_like(y_)
        activation_loops.activation_backward_cpu(y_ if z_value is None else np.asarray(z_value), y_, np.ones_like(y_), factor, a)
        return mul(g, mask_of(factor, y))
    if c == kact.TANH:  # 1 - y^2
        return mul(g, scal("subtract", un("square", y), 1.0, reverse=True))
    if c == kact.SIGMOID:  # y (1 - y)
        return mul(g, mul(y, scal("subtract", y, 1.0, reverse=True)))
    if c == kact.SOFTPLUS:  # sigmoid(z) = 1 - exp(-y)
        return mul(g, scal("subtract", un("exp", un("negative", y)), 1.0, reverse=True))
    if c == kact.SOFTSIGN:  # (1 - |y|)^2
        return mul(g, un("square", scal("subtract", un("abs", y), 1.0, reverse=True)))
    if c == kact.EXPONENTIAL:
        return mul(g, y)
    if c in (kact.ELU, kact.SELU):  # z > 0: scale; else y + scale * alpha
        scale, alpha = (kact.SELU_SCALE, kact.SELU_ALPHA) if c == kact.SELU else (1.0, a.p0)
        if c == kact.ELU and a.p0 <= 0.0:
            unsupported(f"activation '{name}' with alpha <= 0")
        pos = np.asarray(y) > 0
        return mul(g, where(pos, const_like(np.full(np.shape(y), scale), y), scal("add", y, scale * alpha)))
    if c == kact.SILU:  # s (1 + z (1 - s)), s = sigmoid(z)
        z = z_op()
        s = act("sigmoid", z)
        return mul(g, mul(s, scal("add", mul(z, scal("subtract", s, 1.0, reverse=True)), 1.0)))
    if c == kact.LOG_SIGMOID:  # sigmoid(-z)
        return mul(g, act("sigmoid", un("negative", z_op())))
    if c == kact.GELU:  # Phi(z) + z phi(z)
        z = z_op()
        cdf = scal("multiply", scal("add", un("erf", scal("multiply", z, 0.7071067811865476)), 1.0), 0.5)
        pdf = scal("multiply", un("exp", scal("multiply", un("square", z), -0.5)), 0.3989422804014327)
        return mul(g, add(cdf, mul(z, pdf)))
    unsupported(f"activation '{name}'")
    return None


def _act_name(op) -> str:
    return getattr(op, "activation", "linear")


@rule(nn.ActivationOp)
def _activation(a: Args):
    x, y = a.inputs[0], a.outs[0]
    return [activation_grad(a.op.act, _act_name(a.op), a.gouts[0], y, x, lambda: x)], []


@rule(nn.LinearOp)
def _linear(a: Args):
    x, kern = a.inputs[0], a.weights[0]
    bias = a.weights[1] if len(a.weights) > 1 else None

    def z_op():
        z = matmul(x, kern)
        return z if bias is None else add(z, bias)

    dz = activation_grad(a.op.act, _act_name(a.op), a.gouts[0], a.outs[0], a.saved[0] if a.saved else None, z_op)
    gin = [matmul(dz, transpose(kern, (1, 0))) if a.need_in[0] else None]
    gw = [None] * len(a.weights)
    n_in, units = np.shape(kern)
    if a.need_w[0]:
        gw[0] = matmul(transpose(reshape(x, (-1, n_in)), (1, 0)), reshape(dz, (-1, units)))
    if bias is not None and a.need_w[1]:
        gw[1] = reduce_sum(dz, range(np.ndim(dz) - 1))
    return gin, gw


@rule(nn.MatMulOp)
def _matmul(a: Args):
    x, w = a.inputs
    xs, ws = np.shape(x), np.shape(w)
    x2 = reshape(x, (1,) + xs) if len(xs) == 1 else x
    w2 = reshape(w, ws + (1,)) if len(ws) == 1 else w
    g = a.gouts[0]
    gs = np.broadcast_shapes(np.shape(x2)[:-2], np.shape(w2)[:-2]) + (np.shape(x2)[-2], np.shape(w2)[-1])
    g2 = reshape(g, gs)
    gx = reshape(sum_to(matmul(g2, swap_last(w2)), np.shape(x2)), xs) if a.need_in[0] else None
    gw = reshape(sum_to(matmul(swap_last(x2), g2), np.shape(w2)), ws) if a.need_in[1] else None
    return [gx, gw], []


@rule(nn.DropoutOp)
def _dropout(a: Args):
    g = a.gouts[0]
    if not (a.training and a.op.rate > 0.0):
        return [g], []
    return [mul_const(g, np.asarray(a.saved[0]) * (1.0 / (1.0 - a.op.rate)))], []


@rule(nn.SoftmaxOp)
def _softmax(a: Args):
    g, y, axis = a.gouts[0], a.outs[0], a.op.axis
    if a.op.log:  # g - exp(y) sum(g)
        return [sub(g, mul(un("exp", y), reduce_sum(g, (axis,), keepdims=True)))], []
    return [mul(y, sub(g, reduce_sum(mul(g, y), (axis,), keepdims=True)))], []


@rule(nn.VariableOp)
def _variable(a: Args):
    return [], [a.gouts[0]]


# --- element-wise ---------------------------------------------------------------------------------------
@rule(mo.BinaryOp)
def _binary(a: Args):
    x, w = a.inputs
    g, y, fn = a.gouts[0], a.outs[0], a.op.fn
    gx = gw = None
    if fn == "add":
        gx, gw = g, g
    elif fn == "subtract":
        gx, gw = g, (un("negative", g) if a.need_in[1] else None)
    elif fn == "multiply":
        gx = mul(g, w) if a.need_in[0] else None
        gw = mul(g, x) if a.need_in[1] else None
    elif fn == "divide":
        gx = div(g, w) if a.need_in[0] else None
        gw = un("negative", div(mul(g, y), w)) if a.need_in[1] else None
    elif fn in ("maximum", "minimum"):
        xv, wv = np.asarray(x), np.asarray(w)
        take_x = xv >= wv if fn == "maximum" else xv <= wv
        gx = mul(g, mask_of(take_x, y)) if a.need_in[0] else None
        gw = mul(g, mask_of(~take_x, y)) if a.need_in[1] else None
    elif fn == "power":
        if a.need_in[0]:
            gx = mul(g, mul(w, _op(mo.PowerOp(), x, scal("subtract", w, 1.0))))
        if a.need_in[1]:
            pos = np.broadcast_to(np.asarray(x) > 0, np.shape(x))
            safe = where(pos, x, const_like(np.ones(np.shape(x)), x))
            gw = where(np.broadcast_to(pos, np.shape(y)), mul(mul(g, y), un("log", safe)),
                       const_like(np.zeros(np.shape(y)), y))
    gx = sum_to(gx, np.shape(x)) if gx is not None and a.need_in[0] else None
    gw = sum_to(gw, np.shape(w)) if gw is not None and a.need_in[1] else None
    return [gx, gw], []


@rule(mo.ScalarOp)
def _scalar(a: Args):
    x, g, y = a.inputs[0], a.gouts[0], a.outs[0]
    fn, s, rev = a.op.fn, a.op.scalar, a.op.reverse
    if fn == "add":
        return [g], []
    if fn == "subtract":
        return [un("negative", g) if rev else g], []
    if fn == "multiply":
        return [scal("multiply", g, s)], []
    if fn == "divide":
        return [un("negative", div(mul(g, y), x)) if rev else scal("divide", g, s)], []
    if fn == "power" and not rev:  # s x^(s-1)
        if s == 2.0:
            return [mul(g, scal("multiply", x, 2.0))], []
        return [mul(g, scal("multiply", scal("power", x, s - 1.0), s))], []
    if fn == "power":  # s^x log(s)
        if s <= 0:
            unsupported(f"{s} ** x with a base <= 0")
        return [scal("multiply", mul(g, y), float(np.log(s)))], []
    xv = np.asarray(x)
    take = xv >= s if fn == "maximum" else xv <= s
    return [mul(g, mask_of(take, x))], []


def _unary_grad(fn: str, x, y, g, lo: float, hi: float):
    if fn == "negative":
        return un("negative", g)
    if fn == "square":
        return mul(g, scal("multiply", x, 2.0))
    if fn == "sqrt":
        return div(scal("multiply", g, 0.5), y)
    if fn == "exp":
        return mul(g, y)
    if fn == "log":
        return div(g, x)
    if fn == "abs":
        return mul(g, mask_of(np.sign(np.asarray(x)), x))
    if fn == "reciprocal":
        return un("negative", mul(g, un("square", y)))
    if fn == "log1p":
        return div(g, scal("add", x, 1.0))
    if fn == "expm1":
        return mul(g, scal("add", y, 1.0))
    if fn == "sin":
        return mul(g, un("cos", x))
    if fn == "cos":
        return un("negative", mul(g, un("sin", x)))
    if fn == "rsqrt":
        return scal("multiply", mul(g, mul(y, un("square", y))), -0.5)
    if fn == "arctan":
        return div(g, scal("add", un("square", x), 1.0))
    if fn == "erf":
        return mul(g, scal("multiply", un("exp", un("negative", un("square", x))), 1.1283791670955126))
    if fn == "erfinv":
        return mul(g, scal("multiply", un("exp", un("square", y)), 0.886226925452758))
    if fn == "clip":
        xv = np.asarray(x)
        return mul(g, mask_of((xv >= lo) & (xv <= hi), x))
    if fn == "identity":
        return g
    if fn in ("sign", "floor", "ceil", "round", "stop_gradient"):
        return const_like(np.zeros(np.shape(x)), g)
    unsupported(f"the unary function '{fn}'")
    return None


@rule(mo.UnaryOp)
def _unary(a: Args):
    if not a.need_in[0]:
        return [None], []
    return [_unary_grad(a.op.fn, a.inputs[0], a.outs[0], a.gouts[0], a.op.lo, a.op.hi)], []


@rule(mo.CastOp)
def _cast(a: Args):
    return [_op(mo.CastOp(str(np.asarray(a.inputs[0]).dtype)), a.gouts[0])], []


@rule(mo.WhereOp)
def _where(a: Args):
    c, x, w = a.inputs
    g = a.gouts[0]
    cond = np.broadcast_to(np.asarray(c, bool), np.shape(g))
    zeros = const_like(np.zeros(np.shape(g)), g)
    gx = sum_to(where(cond, g, zeros), np.shape(x)) if a.need_in[1] else None
    gw = sum_to(where(cond, zeros, g), np.shape(w)) if a.need_in[2] else None
    return [None, gx, gw], []


@rule(mo.CompareOp)
def _no_gradient(a: Args):
    return [None] * len(a.inputs), [None] * len(a.weights)


@rule(mo.ReduceOp)
def _reduce(a: Args):
    x, y, g = a.inputs[0], a.outs[0], a.gouts[0]
    xs, axes = np.shape(x), a.op.axes
    kept = tuple(1 if i in axes else s for i, s in enumerate(xs))
    gk = reshape(g, kept)
    if a.op.fn == "sum":
        return [broadcast_to(gk, xs)], []
    if a.op.fn == "mean":
        count = int(np.prod([xs[i] for i in axes], dtype=np.int64))
        return [broadcast_to(scal("divide", gk, max(count, 1)), xs)], []
    hit = np.asarray(x) == np.reshape(np.asarray(y), kept)  # max / min: shared among ties, as the kernel
    share = hit / hit.sum(axis=axes, keepdims=True)
    return [mul(broadcast_to(gk, xs), mask_of(share, x))], []


# --- data movement --------------------------------------------------------------------------------------
@rule(so.ReshapeOp)
def _reshape(a: Args):
    return [reshape(a.gouts[0], np.shape(a.inputs[0]))], []


@rule(so.TransposeOp)
def _transpose(a: Args):
    perm = a.op.perm
    return [transpose(a.gouts[0], tuple(int(i) for i in np.argsort(perm)))], []


@rule(so.ConcatOp)
def _concat(a: Args):
    axis, g, out = a.op.axis, a.gouts[0], []
    start = 0
    for x, need in zip(a.inputs, a.need_in, strict=True):
        n = np.shape(x)[axis]
        if need:
            index = tuple((None, None, None) if d != axis else (start, start + n, None) for d in range(np.ndim(g)))
            out.append(_op(ar.IndexOp(index), g))
        else:
            out.append(None)
        start += n
    return out, []


@dataclass(frozen=True)
class SliceAdjointOp(Op):
    """The adjoint of a basic index (`IndexOp`): ``y = zeros(shape); y[index] = g``; its own backward is the
    index again. Only the tape's backward-as-ops uses it (eager)."""

    type_name: ClassVar[str] = "slice_adjoint"
    index: tuple = ()
    shape: tuple = ()

    def _key(self) -> tuple:
        return tuple(slice(*i) if isinstance(i, tuple) else i for i in self.index)

    def output_specs(self, inputs, weights):
        return (TensorSpec(tuple(self.shape), inputs[0].dtype),)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        y = outputs[0]
        y[...] = 0
        view = y[self._key()]
        y[self._key()] = np.reshape(inputs[0], view.shape)

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            np.copyto(grad_inputs[0], np.reshape(grad_outputs[0][self._key()], grad_inputs[0].shape))


@rule(ar.IndexOp)
def _index(a: Args):
    return [_op(SliceAdjointOp(a.op.index, tuple(np.shape(a.inputs[0]))), a.gouts[0])], []


@rule(SliceAdjointOp)
def _slice_adjoint(a: Args):
    return [reshape(_op(ar.IndexOp(a.op.index), a.gouts[0]), np.shape(a.inputs[0]))], []


@rule(ar.BroadcastToOp)
def _broadcast(a: Args):
    return [sum_to(a.gouts[0], np.shape(a.inputs[0]))], []


def _register_late():
    """Rules of ops in modules that import this package's heavier parts (convolutions, spatial ops)."""
    from flexflow_keras.ops import spatial
    from flexflow_keras.ops.conv import Conv2DOp
    from flexflow_keras.ops.conv_transpose import Conv2DTransposeOp
    from flexflow_keras.ops.dynamic_dims import InsertAxisOp
    from flexflow_keras.ops.losses import SPARSE, LossOp
    from flexflow_keras.ops.pooling import GlobalPool2DOp
    from kernels._conv_geometry import pads

    rule(InsertAxisOp)(_reshape)

    @rule(LossOp)
    def _loss(a: Args):
        # each sample's loss gradient (crossentropies of logits, mean squared error) as ops of the prediction
        op, (t, z) = a.op, a.inputs
        c = np.shape(z)[-1]
        gk = reshape(a.gouts[0], tuple(np.shape(a.gouts[0])) + (1,))
        if op.name in (SPARSE, "categorical_crossentropy", "binary_crossentropy"):
            if not op.from_logits:
                unsupported(f"{op.name} of probabilities (a second derivative needs it of logits: "
                            f"from_logits=True, or a softmax / sigmoid output read as logits)")
            labels = (np.eye(c)[np.asarray(t).reshape(np.shape(z)[:-1]).astype(np.int64)] if op.name == SPARSE
                      else np.asarray(t, dtype=np.float64).reshape(np.shape(z)))
            ls = op.label_smoothing
            if op.name == "binary_crossentropy":  # mean over the last axis of sigmoid(z) - t
                labels = const_like(labels * (1.0 - ls) + 0.5 * ls, z)
                return [None, mul(scal("multiply", sub(act("sigmoid", z), labels), 1.0 / c), gk)], []
            labels = labels * (1.0 - ls) + ls / c
            total = const_like(labels.sum(axis=-1, keepdims=True), z)
            d = sub(mul(_op(nn.SoftmaxOp(-1), z), total), const_like(labels, z))  # softmax(z) sum(t) - t
            return [None, mul(d, gk)], []
        if op.name == "mean_squared_error":
            labels = const_like(np.asarray(t).reshape(np.shape(z)), z)
            return [None, mul(scal("multiply", sub(z, labels), 2.0 / c), gk)], []
        unsupported(f"the loss {op.name}")

    @rule(GlobalPool2DOp)
    def _global_pool(a: Args):
        # GlobalAveragePooling1D/2D (keras.io's WGAN-GP on graphs): the output gradient spread over H and W,
        # over H*W for the mean; for the max shared equally among the positions equal to the maximum (the
        # kernels' rule, TensorFlow's reduce_max), or on the forward's argmax (saved, r * W + s) for a NaN
        x = a.inputs[0]
        n, h, w, c = np.shape(x)
        gk = reshape(a.gouts[0], (n, 1, 1, c))
        if a.op.mode == "avg":
            return [broadcast_to(scal("divide", gk, h * w), (n, h, w, c))], []
        if not a.saved:
            unsupported("a global max pooling without its saved argmax")
        xv = np.asarray(x)
        where = np.asarray(a.saved[0]).reshape(n, 1, 1, c)
        best = np.take_along_axis(xv.reshape(n, h * w, c), where.reshape(n, 1, c), axis=1).reshape(n, 1, 1, c)
        hit = xv == best
        ties = hit.sum(axis=(1, 2), keepdims=True)
        share = np.where(ties > 0, hit / np.maximum(ties, 1), np.arange(h * w).reshape(1, h, w, 1) == where)
        return [mul(broadcast_to(gk, (n, h, w, c)), mask_of(share.astype(np.float32), x))], []

    @rule(spatial.Pad2DOp)
    def _pad(a: Args):
        (t, b), (left, r) = a.op.pads
        return [_op(spatial.Pad2DOp(((-t, -b), (-left, -r))), a.gouts[0])], []

    @rule(Conv2DOp)
    def _conv2d(a: Args):
        op = a.op
        if op.dilation != (1, 1):
            unsupported("a dilated convolution")
        x, kern = a.inputs[0], a.weights[0]
        bias = a.weights[1] if len(a.weights) > 1 else None

        def z_op():
            return _op(Conv2DOp(op.strides, op.padding), x, weights=[kern] + ([bias] if bias is not None else []))

        dz = activation_grad(op.act, op.activation, a.gouts[0], a.outs[0], a.saved[0] if a.saved else None, z_op)
        n, h, w, cin = np.shape(x)
        kh, kw = np.shape(kern)[:2]
        ho, wo = np.shape(dz)[1:3]
        (pt, pb), (pl, pr) = [pads(size, k, s, op.padding) for size, k, s in zip((h, w), (kh, kw), op.strides,
                                                                                 strict=True)]
        hp, wp = h + pt + pb, w + pl + pr
        extra = (hp - ((ho - 1) * op.strides[0] + kh), wp - ((wo - 1) * op.strides[1] + kw))
        gin = [None]
        if a.need_in[0]:  # the transposed convolution onto the padded input, then the padding cropped off
            dxp = _op(Conv2DTransposeOp(op.strides, "valid", extra), dz, weights=[kern])
            gin[0] = dxp if (pt, pb, pl, pr) == (0, 0, 0, 0) else _op(spatial.Pad2DOp(((-pt, -pb), (-pl, -pr))), dxp)
        gw = [None] * len(a.weights)
        if a.need_w[0]:
            # dW[a, b, ci, co] = sum_{n,i,j} xpad[n, i s + a, j s + b, ci] dz[n, i, j, co]: a convolution of
            # xpad with the batch as channels by dz as a kernel dilated by the strides
            xp = x if (pt, pb, pl, pr) == (0, 0, 0, 0) else _op(spatial.Pad2DOp(((pt, pb), (pl, pr))), x)
            xt = transpose(xp, (3, 1, 2, 0))  # (cin, hp, wp, n)
            dzk = transpose(dz, (1, 2, 0, 3))  # (ho, wo, n, co)
            if op.strides == (1, 1):
                full = _op(Conv2DOp((1, 1), "valid"), xt, weights=[dzk])
            else:
                full = _op(Conv2DOp((1, 1), "valid", dilation=tuple(op.strides)), xt, weights=[dzk])
            fh, fw = np.shape(full)[1:3]
            if (fh, fw) != (kh, kw):
                full = _op(spatial.Pad2DOp(((0, kh - fh), (0, kw - fw))), full)
            gw[0] = transpose(full, (1, 2, 0, 3))  # (kh, kw, cin, co)
        if bias is not None and a.need_w[1]:
            gw[1] = reduce_sum(dz, (0, 1, 2))
        return gin, gw


_register_late()
