"""Segment reductions: `SegmentReduceOp` and Keras 3's ``ops.segment_sum / max / min / prod``.

``y[s] = reduce(data[i] for segment_ids[i] == s)`` over the leading ``segment_ids.ndim`` dims of data, for
s in [0, num_segments); the rules (empty segments, negative ids, gradients) are TensorFlow's, in
`kernels.segment`. Graph networks aggregate the messages of a node's edges this way (keras.io's
gnn_citations and GAT examples).

Parallel rules: the output's first dim (the segments) is never split, and the op has no partial-sum
split. A piece of the segments would read every row of data and every id and drop most of them, and a
split of data's rows gives partial results that only a sum could add (a max, min or prod could not go
through the execution's ``+`` reduction), so neither is offered to the search. The trailing (feature)
dims split freely: each piece reduces its own columns of every row. A trailing dim may be the batch
(data transposed to (nodes, batch, ...), keras.io's traffic forecasting): it is the output's sample dim
and splits the same way.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import DataError, ShapeError
from flexflow_keras.ops import functional as F
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import deferred_check, fmt, kernel, to_host
from flexflow_keras.ops.base import Op, apply_op
from flexflow_keras.ops.graph import KerasTensor, TensorSpec
from kernels import segment as kseg

__all__ = ["SegmentReduceOp", "segment_max", "segment_min", "segment_prod", "segment_sum"]


@dataclass(frozen=True)
class SegmentReduceOp(Op):
    """``y = segment_<fn>(data, segment_ids, num_segments)``; inputs (data, segment_ids), ids not
    differentiable. `empty_zero`: an empty segment's max / min is 0 (TensorFlow's sorted ``segment_max``)
    rather than the dtype's lowest / highest value (``unsorted_segment_max``)."""

    type_name: ClassVar[str] = "segment_reduce"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (True, False)
    fn: str = "sum"
    num_segments: int = 1
    empty_zero: bool = False

    def __post_init__(self):
        if self.fn not in kseg.MODES:
            raise ShapeError(f"segment reduction: fn must be one of {', '.join(kseg.MODES)}, received {self.fn!r}.")
        if isinstance(self.num_segments, bool) or not isinstance(self.num_segments, numbers.Integral) \
                or self.num_segments < 0:
            raise ShapeError(f"segment_{self.fn} expects num_segments to be a non-negative integer, received "
                             f"num_segments={self.num_segments!r}.")

    def output_specs(self, inputs, weights):
        who = f"segment_{self.fn}"
        if len(inputs) != 2:
            raise ShapeError(f"{who} takes 2 inputs (data, segment_ids), received {len(inputs)}.")
        x, ids = inputs
        if np.dtype(ids.dtype).kind not in "iu":
            raise ShapeError(f"{who} expects integer segment_ids, received dtype {ids.dtype}; cast them with "
                             f"ops.cast(segment_ids, 'int32').")
        k = ids.ndim
        if k == 0 or k > x.ndim or tuple(x.shape[:k]) != tuple(ids.shape):
            raise ShapeError(f"{who}: data {fmt(x.shape)} must start with the shape of segment_ids "
                             f"{fmt(ids.shape)} (one id per row of data; a batch dim in one needs it in the "
                             f"other).")
        dtype = x.dtype
        if self.fn in ("mean", "sqrt_n") and np.dtype(dtype).kind != "f":
            if self.fn == "sqrt_n":
                raise ShapeError(f"segment_sqrt_n expects float data, received dtype {x.dtype}; cast it first.")
            dtype = "float64"  # TensorFlow divides the integer sums by the counts in float64
        return (TensorSpec((self.num_segments,) + tuple(x.shape[k:]), dtype),)

    def sample_dim(self):
        return None  # output rows are segments, not samples

    def parallel_space(self, inputs, weights):
        return par.space_except(self, inputs, weights, [0], f"segment_{self.fn}: a piece of the segments would "
                                f"read every row of data (rows are not split either)")

    def tile(self, shapes, out_box, part=0, parts=1):
        """Every row of data and every id, the output tile's trailing (feature) dims of data."""
        x, ids = shapes.inputs
        k = len(ids)
        lo = (0,) * k + tuple(out_box[0][1:])
        hi = tuple(x[:k]) + tuple(out_box[1][1:])
        return par.Tile(((lo, hi), par.whole(ids)), (), (out_box,))

    def _describe(self):
        n = self.num_segments

        def describe(pos, value) -> DataError:
            return DataError(f"segment_{self.fn} received segment id {value} at flat position {pos}, outside "
                             f"[0, {n}) for num_segments={n}; give ids below num_segments (a negative id "
                             f"drops its row).")
        return describe

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        x, ids = inputs
        describe = self._describe()
        bad = kernel(kseg, "segment_forward", ctx)(self.fn, x, ids, outputs[0], self.empty_zero,
                                                   **deferred_check(ctx, self, describe))
        if bad >= 0:
            raise describe(bad, to_host(ids).reshape(-1)[bad])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            x, ids = inputs
            kernel(kseg, "segment_backward", ctx)(self.fn, x, ids, outputs[0], grad_outputs[0], grad_inputs[0],
                                                  ctx.acc_input(0))


def _count(num_segments, ids, who: str) -> int:
    """num_segments as an int: given (a number or a 0-d array), or max(ids) + 1 from array ids."""
    if num_segments is None:
        if isinstance(ids, KerasTensor):
            raise ShapeError(f"{who} on symbolic segment_ids needs num_segments (the output's row count), e.g. "
                             f"num_segments=ops.shape(nodes)[0]; it cannot be read from ids known only when "
                             f"the model runs.")
        flat = np.asarray(ids).reshape(-1)
        return int(flat.max()) + 1 if flat.size else 0
    if isinstance(num_segments, KerasTensor):
        raise ShapeError(f"{who} needs num_segments known when the model is built (an int such as "
                         f"data.shape[0]), received a symbolic tensor.")
    value = np.asarray(num_segments)
    if value.ndim != 0 or value.dtype.kind not in "iu":
        raise ShapeError(f"{who} expects num_segments to be an integer, received {num_segments!r}.")
    return int(value)


def segment_reduce(fn: str, data, segment_ids, num_segments=None, empty_zero: bool = False,
                   who: str | None = None):
    """`SegmentReduceOp` on arrays (eager) or symbolic tensors; ids that are not integers are refused.

    Args:
        fn: one of sum, mean, sqrt_n, max, min, prod. data: (*ids.shape, ...) tensor.
        segment_ids: integer ids, one per row of data (negative: the row is dropped).
        num_segments: output rows (None: max(ids) + 1, for array ids). empty_zero: see `SegmentReduceOp`.
        who: the name errors give the call.
    """
    who = who or f"segment_{fn}"
    sym = F._symbolic(data, segment_ids)
    ids = segment_ids if isinstance(segment_ids, KerasTensor) else np.asarray(segment_ids)
    if not isinstance(ids, KerasTensor) and ids.dtype.kind not in "iu":
        raise ShapeError(f"{who} expects integer segment_ids, received dtype {ids.dtype}; cast them with "
                         f"ops.cast(segment_ids, 'int32').")
    op = SegmentReduceOp(fn, _count(num_segments, ids, who), bool(empty_zero))
    return apply_op(op, [F._tensor(data, sym), F._tensor(ids, sym)])


def segment_sum(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002 - Keras' argument name
    """Sum of the rows of `data` in each segment (Keras 3's ``keras.ops.segment_sum``).

    Args:
        data: tensor whose leading dims match `segment_ids`.
        segment_ids: integer ids (negative ids drop their row; ids must be below num_segments).
        num_segments: output rows; None: max(segment_ids) + 1 (needs array ids).
        sorted: whether the ids are sorted (a hint; the result is the same).

    Example:
        >>> segment_sum(np.array([1, 2, 10, 20]), np.array([0, 0, 1, 1]))
        array([ 3, 30])
    """
    return segment_reduce("sum", data, segment_ids, num_segments, who="segment_sum")


def segment_max(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002 - Keras' argument name
    """Max of the rows of `data` in each segment (Keras 3's ``keras.ops.segment_max``, TensorFlow backend:
    an empty segment holds the dtype's lowest value, or 0 with ``sorted=True``, TensorFlow's segment_max).

    Args: as `segment_sum`. The gradient goes to the rows equal to the max, split equally between ties.
    """
    return segment_reduce("max", data, segment_ids, num_segments, empty_zero=bool(sorted), who="segment_max")


def segment_min(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002 - Keras' argument name
    """Min of the rows of `data` in each segment (empty: the dtype's highest value, or 0 when sorted)."""
    return segment_reduce("min", data, segment_ids, num_segments, empty_zero=bool(sorted), who="segment_min")


def segment_prod(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002 - Keras' argument name
    """Product of the rows of `data` in each segment (empty: 1)."""
    return segment_reduce("prod", data, segment_ids, num_segments, who="segment_prod")
