"""Privileges: small immutable values saying how a task touches a region argument.

`RO` (read-only), `RW` (read-write), `WD` (write-discard: the old contents are not read) and
`Reduce(op)` with op in `+ * max min`. A privilege may name the fields it covers: `RW("a", "b")`,
`Reduce("+", "grad")`. They print themselves the way they are written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Codes used by the dependence analysis (compared as ints on the hot path).
READ_ONLY, READ_WRITE, WRITE_DISCARD, REDUCE = 0, 1, 2, 3

REDUCTION_OPS = ("+", "*", "max", "min")
_MODE_CODE = {"RO": READ_ONLY, "RW": READ_WRITE, "WD": WRITE_DISCARD, "Reduce": REDUCE}


@dataclass(frozen=True, slots=True)
class Privilege:
    """How a task accesses one region argument.

    Args:
        mode: "RO", "RW", "WD" or "Reduce".
        redop: the reduction operator for "Reduce" ("+", "*", "max", "min"), else None.
        fields: the field names covered; empty means every field of the region.
    """

    mode: str
    redop: str | None = None
    fields: tuple[str, ...] = ()
    code: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.mode not in _MODE_CODE:
            raise ValueError(f"Privilege mode must be one of RO, RW, WD, Reduce; received {self.mode!r}")
        if (self.mode == "Reduce") != (self.redop is not None):
            raise ValueError(f"Privilege {self.mode} takes a reduction operator only for Reduce; "
                             f"received redop={self.redop!r}")
        for f in self.fields:
            if not isinstance(f, str):
                raise TypeError(f"Privilege fields are field names (str); received {f!r}")
        object.__setattr__(self, "code", _MODE_CODE[self.mode])

    @property
    def reads(self) -> bool:
        """True when the task sees the region's previous contents (RO, RW, Reduce folds into them)."""
        return self.mode in ("RO", "RW")

    @property
    def writes(self) -> bool:
        """True when the task changes the region's contents."""
        return self.mode != "RO"

    def __call__(self, *fields: str) -> Privilege:
        """The same privilege restricted to `fields`, e.g. `RO("a")`."""
        if self.fields:
            raise TypeError(f"{self!r} already names its fields; write {self.mode}({', '.join(map(repr, fields))})")
        return Privilege(self.mode, self.redop, tuple(fields))

    def __repr__(self) -> str:
        parts = [repr(self.redop)] if self.redop is not None else []
        parts += [repr(f) for f in self.fields]
        return f"{self.mode}({', '.join(parts)})" if parts else self.mode

    __str__ = __repr__


RO = Privilege("RO")
R = RO  # pygion's spelling
RW = Privilege("RW")
WD = Privilege("WD")


def Reduce(op: str, *fields: str) -> Privilege:  # noqa: N802 - reads like a value constructor, as in pygion
    """A reduction privilege: the task's buffer is folded into the region with `op`.

    The body must fold into the buffer it receives (`buf += v`, `np.maximum(buf, v, out=buf)`), never
    overwrite it: the runtime may hand it the region itself or a private buffer filled with the identity.

    Args:
        op: "+", "*", "max" or "min".
        fields: optional field names the reduction covers.
    """
    if op not in REDUCTION_OPS:
        raise ValueError(f"Reduce expects an operator in {REDUCTION_OPS}; received {op!r}. "
                         f"Example: Reduce('+')")
    return Privilege("Reduce", op, tuple(fields))


def identity(op: str, dtype: np.dtype):
    """The identity element of reduction `op` for `dtype` (0 for +, 1 for *, -inf/+inf or int limits)."""
    dtype = np.dtype(dtype)
    if op == "+":
        return dtype.type(0)
    if op == "*":
        return dtype.type(1)
    if dtype.kind == "f" or dtype.kind == "c":
        return dtype.type(-np.inf if op == "max" else np.inf)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.min if op == "max" else info.max)
    if dtype.kind == "b":
        return np.bool_(op == "min")
    raise TypeError(f"Reduce({op!r}) has no identity for dtype {dtype}")


def fold_into(op: str, target: np.ndarray, buf: np.ndarray) -> None:
    """target = target (op) buf, in place, on host arrays."""
    if op == "+":
        np.add(target, buf, out=target)
    elif op == "*":
        np.multiply(target, buf, out=target)
    elif op == "max":
        np.maximum(target, buf, out=target)
    else:
        np.minimum(target, buf, out=target)
