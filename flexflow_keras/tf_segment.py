"""TensorFlow's segment reductions under `python -m flexflow_keras`: ``tf.math.unsorted_segment_sum / mean /
max / min / prod / sqrt_n`` and ``tf.math.segment_sum / mean / max / min / prod`` as TensorFlow 2.21 defines
them, on arrays and on symbolic tensors (ops/segment.py's `SegmentReduceOp`).

- unsorted: ``num_segments`` rows; a negative id drops its row; an empty segment is 0 (sum, mean,
  sqrt_n), 1 (prod), the dtype's lowest (max) or highest (min) value.
- sorted: ids must be non-negative and non-decreasing (checked here, on the host: TensorFlow's sorted ops
  need their ids as values, so symbolic ids are refused with the unsorted spelling); ``ids[-1] + 1``
  rows; an empty segment's max and min are 0.
- an integer mean is float64 (TensorFlow divides the integer sums by the counts).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError, DataError
from flexflow_keras.ops.graph import KerasTensor


def _tensor(x):
    """x as TensorFlow converts it (a list of Python floats float32, of ints int32); tensors as they are."""
    if isinstance(x, KerasTensor | np.ndarray) or hasattr(x, "value"):
        return x
    from flexflow_keras.tf_compat import _constant

    return _constant(x)


UNSORTED = ("sum", "mean", "max", "min", "prod", "sqrt_n")
SORTED = ("sum", "mean", "max", "min", "prod")


def _unsorted(fn: str):
    who = f"tf.math.unsorted_segment_{fn}"

    def call(data, segment_ids, num_segments, name=None):
        from flexflow_keras.ops.segment import segment_reduce

        if num_segments is None:
            raise ArgumentError(f"{who} needs num_segments (the output's row count), received None.")
        return segment_reduce(fn, _tensor(data), segment_ids, num_segments, who=who)

    call.__name__ = call.__qualname__ = f"unsorted_segment_{fn}"
    call.__doc__ = f"`{who}(data, segment_ids, num_segments)` (see the module docstring)."
    return call


def _sorted(fn: str):
    who = f"tf.math.segment_{fn}"

    def call(data, segment_ids, name=None):
        from flexflow_keras.ops.segment import segment_reduce

        if isinstance(segment_ids, KerasTensor):
            raise ArgumentError(f"{who} reads its sorted segment_ids as values, and these are symbolic (known "
                                f"only when the model runs); use tf.math.unsorted_segment_{fn}(data, "
                                f"segment_ids, num_segments) with the row count.")
        ids = np.asarray(segment_ids)
        if ids.ndim != 1:
            raise ArgumentError(f"{who} expects 1-D segment_ids, received shape {ids.shape}.")
        if ids.size and ids.min() < 0:
            raise DataError(f"{who}: segment ids must be >= 0, received {int(ids.min())} at position "
                            f"{int(np.argmin(ids))}.")
        if ids.size > 1 and np.any(np.diff(ids) < 0):
            at = int(np.flatnonzero(np.diff(ids) < 0)[0]) + 1
            raise DataError(f"{who}: segment ids are not increasing (position {at}: {int(ids[at])} after "
                            f"{int(ids[at - 1])}); sort the rows by id, or use tf.math.unsorted_segment_{fn}.")
        n = int(ids[-1]) + 1 if ids.size else 0
        return segment_reduce(fn, _tensor(data), ids, n, empty_zero=True, who=who)

    call.__name__ = call.__qualname__ = f"segment_{fn}"
    call.__doc__ = f"`{who}(data, segment_ids)` (see the module docstring)."
    return call


CALLS = {**{f"tf.math.unsorted_segment_{fn}": _unsorted(fn) for fn in UNSORTED},
         **{f"tf.math.segment_{fn}": _sorted(fn) for fn in SORTED}}
