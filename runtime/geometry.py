"""Boxes: half-open integer rectangles `(lo, hi)` in a root region's coordinates, and their algebra.

Used by partitions (where a subregion lies), the dependence analysis (do two accesses overlap) and the
instance manager (which parts of an instance hold valid data). Boxes are plain tuples so that they
hash, compare and cost nothing to pass around.
"""

from __future__ import annotations

Box = tuple[tuple[int, ...], tuple[int, ...]]


def box_of_shape(shape: tuple[int, ...]) -> Box:
    return (tuple(0 for _ in shape), tuple(int(s) for s in shape))


def box_empty(b: Box) -> bool:
    lo, hi = b
    return any(h <= low for low, h in zip(lo, hi, strict=True))


def box_volume(b: Box) -> int:
    lo, hi = b
    v = 1
    for low, h in zip(lo, hi, strict=True):
        if h <= low:
            return 0
        v *= h - low
    return v


def box_shape(b: Box) -> tuple[int, ...]:
    lo, hi = b
    return tuple(max(0, h - low) for low, h in zip(lo, hi, strict=True))


def box_overlaps(a: Box, b: Box) -> bool:
    """True when the two boxes share at least one point."""
    alo, ahi = a
    blo, bhi = b
    for i in range(len(alo)):
        if alo[i] >= bhi[i] or blo[i] >= ahi[i] or alo[i] >= ahi[i] or blo[i] >= bhi[i]:
            return False
    return True


def box_contains(outer: Box, inner: Box) -> bool:
    """True when every point of `inner` lies in `outer` (an empty inner is contained anywhere)."""
    olo, ohi = outer
    ilo, ihi = inner
    for i in range(len(olo)):
        if ihi[i] <= ilo[i]:
            return True
    for i in range(len(olo)):
        if ilo[i] < olo[i] or ihi[i] > ohi[i]:
            return False
    return True


def box_intersect(a: Box, b: Box) -> Box | None:
    """The common part of two boxes, or None when they do not overlap."""
    lo = tuple(max(x, y) for x, y in zip(a[0], b[0], strict=True))
    hi = tuple(min(x, y) for x, y in zip(a[1], b[1], strict=True))
    for low, h in zip(lo, hi, strict=True):
        if h <= low:
            return None
    return (lo, hi)


def box_subtract(a: Box, b: Box) -> list[Box]:
    """`a` minus `b` as a list of disjoint boxes (at most 2 per dimension)."""
    inter = box_intersect(a, b)
    if inter is None:
        return [] if box_empty(a) else [a]
    out: list[Box] = []
    lo, hi = list(a[0]), list(a[1])
    for d in range(len(lo)):
        if lo[d] < inter[0][d]:
            piece_hi = list(hi)
            piece_hi[d] = inter[0][d]
            out.append((tuple(lo), tuple(piece_hi)))
            lo[d] = inter[0][d]
        if inter[1][d] < hi[d]:
            piece_lo = list(lo)
            piece_lo[d] = inter[1][d]
            out.append((tuple(piece_lo), tuple(hi)))
            hi[d] = inter[1][d]
    return out


def boxes_subtract(pieces: list[Box], b: Box) -> list[Box]:
    """Every box of `pieces` minus `b`."""
    out: list[Box] = []
    for p in pieces:
        out.extend(box_subtract(p, b))
    return out


def box_is_block(outer: Box, box: Box) -> bool:
    """Whether `box` is one C-contiguous block of a row-major array covering `outer`: past its leading
    extent-1 dims, at most one dim is partial and every dim after it is whole."""
    olo, ohi = outer
    lo, hi = box
    n = len(lo)
    d = 0
    while d < n and hi[d] - lo[d] == 1:
        d += 1
    return all(lo[e] == olo[e] and hi[e] == ohi[e] for e in range(d + 1, n))


def box_slices(b: Box, origin: tuple[int, ...] | None = None) -> tuple:
    """Slices selecting box `b` from an array whose element 0 sits at `origin` (default: the origin).
    A 0-d box gives ``(...,)``: indexing a 0-d array with ``()`` returns a scalar copy, not a view."""
    if not b[0]:
        return (Ellipsis,)
    if origin is None:
        return tuple(slice(low, h) for low, h in zip(b[0], b[1], strict=True))
    return tuple(slice(low - o, h - o) for low, h, o in zip(b[0], b[1], origin, strict=True))


def equal_splits(extent: int, degree: int) -> list[tuple[int, int]]:
    """Split [0, extent) into `degree` contiguous pieces whose sizes differ by at most one (larger first)."""
    base, extra = divmod(extent, degree)
    out, lo = [], 0
    for i in range(degree):
        size = base + (1 if i < extra else 0)
        out.append((lo, lo + size))
        lo += size
    return out
