"""`EinsumOp`: Einstein summation over one or two operands, with its backward pass.

The gradient of an operand is itself an einsum: of the output's gradient with the other operand, onto
the operand's subscripts (then broadcast over subscripts that only that operand has, which the forward
summed away). Repeated subscripts inside one operand (diagonals) and ``...`` are refused. A symbolic
result keeps the batch first: its first output subscript must be the first subscript of a batched operand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import CrossBatchError, ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import fmt, to_host, write
from flexflow_keras.ops.base import Op, apply_op
from flexflow_keras.ops.graph import TensorSpec


def _parse(subscripts: str, n: int) -> tuple[tuple[str, ...], str]:
    spec = subscripts.replace(" ", "")
    if "..." in spec:
        raise ShapeError(f"einsum: '...' is not supported ({subscripts!r}); write every subscript.")
    lhs, _, out = spec.partition("->")
    ins = tuple(lhs.split(","))
    if not _:
        counts = {c: lhs.count(c) for c in lhs if c != ","}
        out = "".join(sorted(c for c, k in counts.items() if k == 1))
    if len(ins) != n or n not in (1, 2):
        raise ShapeError(f"einsum: {subscripts!r} names {len(ins)} operands, received {n} (one or two are "
                         f"supported).")
    for s in (*ins, out):
        if len(set(s)) != len(s):
            raise ShapeError(f"einsum: repeated subscripts in {s!r} ({subscripts!r}) are not supported.")
    return ins, out


def _grad(dy: np.ndarray, out: str, others: list[tuple[str, np.ndarray]], target: str,
          target_shape: tuple[int, ...]) -> np.ndarray:
    present = set(out).union(*[set(s) for s, _ in others])
    reduced = "".join(c for c in target if c in present)
    spec = ",".join([out] + [s for s, _ in others]) + "->" + reduced
    g = np.einsum(spec, dy, *[a for _, a in others])
    shape = [target_shape[i] if c in present else 1 for i, c in enumerate(target)]
    return np.broadcast_to(g.reshape(shape), target_shape)


@dataclass(frozen=True)
class EinsumOp(Op):
    """``y = einsum(subscripts, *inputs)`` for one or two inputs."""

    type_name: ClassVar[str] = "einsum"
    subscripts: str = "ij,jk->ik"
    batched: bool = True  # the output's first dim is the batch (its first subscript leads a batched operand)

    def output_specs(self, inputs, weights):
        ins, out = _parse(self.subscripts, len(inputs))
        sizes: dict[str, int | None] = {}
        for s, t in zip(ins, inputs, strict=True):
            if len(s) != t.ndim:
                raise ShapeError(f"einsum: operand {s!r} has {len(s)} subscripts but shape {fmt(t.shape)}.")
            for c, d in zip(s, t.shape, strict=True):
                if c not in sizes or sizes[c] == 1:
                    sizes[c] = d
                elif d not in (1, sizes[c]):
                    raise ShapeError(f"einsum {self.subscripts!r}: subscript {c!r} is {sizes[c]} and {d}.")
        batch = [s[0] for s, t in zip(ins, inputs, strict=True) if t.ndim and t.shape[0] is None]
        if batch and (not out or out[0] != batch[0] or any(b != batch[0] for b in batch)):
            raise CrossBatchError(f"einsum {self.subscripts!r}: the batch subscript {batch[0]!r} must stay the first "
                                  f"output subscript (one batch dim, first), as a model's graph splits tensors by "
                                  f"samples; a product of two batched operands over their batches (tf.tensordot(x, "
                                  f"x, axes=(2, 2))) is only computed inside an activity regularizer.")
        if any(c not in sizes for c in out):
            raise ShapeError(f"einsum {self.subscripts!r}: output subscripts must appear in an operand.")
        dtype = str(np.result_type(*[t.dtype for t in inputs]))
        return (TensorSpec(tuple(sizes[c] for c in out), dtype),)

    def sample_dim(self):
        return 0 if self.batched else None

    def tile(self, shapes, out_box, part=0, parts=1):
        # operands led by the batch subscript read the tile's samples; the others (weights) are read whole
        ins, out = _parse(self.subscripts, len(shapes.inputs))
        boxes = []
        for s, shape in zip(ins, shapes.inputs, strict=True):
            if self.batched and s and s[0] == out[0]:
                boxes.append(((out_box[0][0],) + (0,) * (len(shape) - 1), (out_box[1][0],) + tuple(shape[1:])))
            else:
                boxes.append(par.whole(shape))
        return par.Tile(tuple(boxes), (), (out_box,))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        arrays = [to_host(a) for a in inputs]
        write(outputs[0], np.einsum(self.subscripts.replace(" ", ""), *arrays))

    def backward_reads(self):
        return True, False  # each operand's gradient contracts dy with the others

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        ins, out = _parse(self.subscripts, len(inputs))
        arrays = [to_host(a) for a in inputs]
        dy = to_host(grad_outputs[0])
        for i, gi in enumerate(grad_inputs):
            if gi is None:
                continue
            others = [(s, a) for j, (s, a) in enumerate(zip(ins, arrays, strict=True)) if j != i]
            g = _grad(dy, out, others, ins[i], arrays[i].shape)
            write(gi, to_host(gi) + g if ctx.acc_input(i) else g)


def einsum(subscripts: str, *operands):
    """Einstein summation over one or two operands (symbolic or eager).

    Example:
        >>> einsum("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4))).shape
        (2, 4)
    """
    from flexflow_keras.ops import tape
    from flexflow_keras.ops.functional import _symbolic, _tensor

    sym = _symbolic(*operands)
    ts = [_tensor(o, sym) for o in operands]
    if not sym and not tape.recording():  # NumPy's einsum; a recording GradientTape needs the op
        return np.einsum(subscripts, *[np.asarray(t) for t in ts])
    from flexflow_keras.ops.graph import KerasTensor

    batched = any(isinstance(t, KerasTensor) and t.ndim and t.shape[0] is None for t in ts)
    return apply_op(EinsumOp(subscripts, bool(batched)), ts)

