"""Helpers shared by the op classes: kernel dispatch by backend, host/device moves of small vectors, and
shape arithmetic with an unknown (None) batch dim."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from flexflow_keras.errors import ShapeError

BACKENDS = ("cpu", "cuda")


def kernel(module, name: str, ctx):
    """``module.<name>_<ctx.backend>``, e.g. ``kernel(linear, "linear_forward", ctx)``."""
    if ctx.backend not in BACKENDS:
        raise ValueError(f"KernelContext.backend must be one of {BACKENDS}, received {ctx.backend!r}.")
    return getattr(module, f"{name}_{ctx.backend}")


def deferred_check(ctx, op, describe) -> dict:
    """Keyword arguments for a kernel that checks ids or indices. On CUDA: ``check=`` this op's
    `kernels.gpu.checks.DeviceCheck`, so the kernel does not wait for the device to read the result; the
    first failure is raised as ``describe(position, value)`` where the training loop reads values anyway
    (see kernels/gpu/checks.py). On the CPU: none (the kernel returns the bad position at once)."""
    if ctx.backend != "cuda":
        return {}
    from kernels.gpu import checks

    return {"check": checks.check_for(("op", id(op)), describe, owner=op)}


def to_host(a) -> np.ndarray:
    """A NumPy copy (device arrays) or the array itself (host arrays)."""
    return a.copy_to_host() if hasattr(a, "copy_to_host") else np.asarray(a)


def write(dst, value) -> None:
    """Store a host value into a host or device array of the same shape."""
    if hasattr(dst, "copy_to_device"):
        dst.copy_to_device(np.ascontiguousarray(value, dtype=dst.dtype))
    else:
        dst[...] = value


def fmt(shape: Sequence[int | None]) -> str:
    """A shape as Keras prints it: ``(None, 28, 28)``."""
    return "(" + ", ".join("None" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def norm_axis(axis: int, ndim: int, who: str) -> int:
    """`axis` as a non-negative int; raises ShapeError naming `who` when out of range."""
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{who}: axis {axis} is out of range for a {ndim}-D input; use an axis in "
                         f"[{-ndim}, {ndim - 1}].")
    return axis % ndim


def broadcast_shapes(a: Sequence[int | None], b: Sequence[int | None], who: str) -> tuple[int | None, ...]:
    """NumPy broadcasting of two symbolic shapes, as Keras 3 broadcasts them.

    None in a shape's first dim is the batch: it broadcasts only against 1 or None. None elsewhere is an
    open dim (``Input(shape=(None,))``): against a known size it takes that size, as TensorFlow's static
    broadcasting does, and the data's length is checked when the graph is recorded again at the data's
    shapes (models/variable_dims.py), where a length that differs is this error with both sizes."""
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + tuple(a)
    pb = (1,) * (n - len(b)) + tuple(b)
    batch_a, batch_b = n - len(a), n - len(b)  # where each shape's own first dim lands
    out: list[int | None] = []
    for i, (x, y) in enumerate(zip(pa, pb, strict=True)):
        if x == y:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None and i != batch_a and y is not None:
            out.append(y)  # an open dim against a known size
        elif y is None and i != batch_b and x is not None:
            out.append(x)
        else:
            def name(d, batch):
                return ("None (the batch)" if batch else "None (an open dim)") if d is None else d
            raise ShapeError(f"{who}: cannot broadcast shapes {fmt(a)} and {fmt(b)}: dim {i} is "
                             f"{name(x, i == batch_a)} vs {name(y, i == batch_b)}. "
                             f"Make the shapes equal or 1 in that dim (e.g. reshape the constant).")
    return tuple(out)


def known_size(shape: Sequence[int | None]) -> int | None:
    """Product of the dims, or None when one is unknown."""
    if any(s is None for s in shape):
        return None
    return int(np.prod(shape, dtype=np.int64))


def acc(flags: Sequence[bool], i: int) -> bool:
    return bool(flags[i]) if i < len(flags) else False
