"""`InputSpec`: what a layer accepts (ndim, dtype, fixed axes), and the check that names the fix."""

from __future__ import annotations

import math

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.utils import tree


class InputSpec:
    """Constraints on one input of a layer.

    Args:
        dtype: required dtype name, or None.
        shape: full required shape (None entries are free), or None.
        ndim: exact rank, or None.
        max_ndim: largest rank, or None.
        min_ndim: smallest rank, or None.
        axes: ``{axis: size}`` for axes whose size is fixed (negative axes count from the end).
        name: the input's name (for messages).
    """

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None,
                 allow_last_axis_squeeze=False, name=None, optional=False):
        self.dtype = str(np.dtype(dtype)) if dtype is not None else None
        self.shape = tuple(shape) if shape is not None else None
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.axes = {int(k): int(v) for k, v in (axes or {}).items()}
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        self.name, self.optional = name, optional

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in (("dtype", self.dtype), ("shape", self.shape), ("ndim", self.ndim),
                                          ("max_ndim", self.max_ndim), ("min_ndim", self.min_ndim),
                                          ("axes", self.axes or None)) if v is not None]
        return f"InputSpec({', '.join(parts)})"


def _axis_phrase(axis: int, ndim: int) -> str:
    if axis == -1 or axis == ndim - 1:
        return "last dim"
    return f"axis {axis}"


def flatten_hint(shape, expected_last: int) -> str:
    """" Add Flatten() before it?" when the per-sample size matches what the layer expects."""
    if len(shape) > 2 and all(s is not None for s in shape[1:]) and math.prod(shape[1:]) == expected_last:
        return " Add Flatten() before it?"
    return ""


def check_input_spec(layer, inputs) -> None:
    """Raise ShapeError naming the layer, what it expected, the received shape and the fix.

    `layer.input_spec` is an InputSpec, a list of them (one per flattened input) or None.
    """
    specs = layer.input_spec
    if specs is None:
        return
    flat = [x for x in tree.flatten(inputs) if x is not None]
    if isinstance(specs, InputSpec):
        specs = [specs]
    specs = list(specs)
    if len(specs) > 1 and len(flat) != len(specs):
        raise ShapeError(f"Layer '{layer.name}' expects {len(specs)} input(s), received {len(flat)}.")
    for index, (x, spec) in enumerate(zip(flat, specs, strict=False)):
        if spec is None:
            continue
        shape = tuple(getattr(x, "shape", np.shape(x)))
        ndim = len(shape)
        head = f"Input {index} of layer '{layer.name}' is incompatible: expected "

        def fail(what: str, _shape=shape, _spec=spec, _index=index, _head=head) -> None:
            hint = layer._input_hint(_index, _shape, _spec)
            raise ShapeError(f"{_head}{what}, got shape {_shape}.{hint}")

        if spec.shape is not None and (ndim != len(spec.shape) or any(
                w is not None and g is not None and w != g for w, g in zip(spec.shape, shape, strict=False))):
            fail(f"shape {spec.shape}")
        if spec.ndim is not None and ndim != spec.ndim and not (
                spec.allow_last_axis_squeeze and ndim == spec.ndim + 1 and shape[-1] == 1):
            fail(f"ndim={spec.ndim}")
        if spec.min_ndim is not None and ndim < spec.min_ndim:
            fail(f"min_ndim={spec.min_ndim}")
        if spec.max_ndim is not None and ndim > spec.max_ndim:
            fail(f"max_ndim={spec.max_ndim}")
        if spec.dtype is not None:
            got = str(np.dtype(getattr(x, "dtype", np.asarray(x).dtype)))
            if got != spec.dtype:
                raise ShapeError(f"{head}dtype {spec.dtype}, got dtype {got} (shape {shape}).")
        for axis, size in spec.axes.items():
            if -ndim <= axis < ndim and shape[axis] is not None and shape[axis] != size:
                fail(f"{_axis_phrase(axis, ndim)} {size}")
