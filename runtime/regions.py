"""Regions, partitions and subregions: what data exists and how it is split.

A `Region` is an n-d array of one dtype, or of named fields (`Region.fields`), whose storage the
runtime manages in instances. A `Partition` comes from a named constructor (`equal`, `replicate`,
`by_boxes`) and maps colors to `Subregion`s; it knows whether its subregions are disjoint. `P[i, j]`
returns the same Subregion object every time, so identity is a cheap equality on the hot path.

Every region-like (a Region is its own whole subregion) carries, precomputed: `root`, `box` (in root
coordinates), `_slices` (to view it from the root's array), `_whole`, `_part`, `_color`, `_empty`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from runtime.geometry import (
    Box,
    box_contains,
    box_empty,
    box_is_block,
    box_of_shape,
    box_overlaps,
    box_shape,
    box_slices,
    equal_splits,
)

_region_ids = itertools.count()


def _check_shape(shape, who: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        if isinstance(shape, str):
            raise TypeError(shape)
        shape = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise TypeError(f"{who} expects a shape (tuple of non-negative ints), received {shape!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"{who} expects non-negative extents, received shape {shape}")
    return shape


class Region:
    """An n-d array the runtime stores, moves and orders accesses to.

    Args:
        shape: extents per dimension.
        dtype: element type (NumPy dtype or anything `np.dtype` accepts).
        name: used in errors, profiles and logs (default `region<N>`).
        exact_pieces: a layout request: a subregion that is not one contiguous block of the region gets
            an instance of its own in system memory (Legion's exact instance), so tasks receive it as a
            contiguous array and no copy is made while the same piece is read and written step after
            step (a weight split along its columns). Default: every task sees a view of the one home
            array.

    Example:
        >>> R = Region((64, 784), np.float32, name="x")
        >>> P = Partition.equal(R, (4, 1))
    """

    def __init__(self, shape, dtype=np.float64, name: str | None = None, exact_pieces: bool = False):
        self._setup(_check_shape(shape, "Region"), {None: np.dtype(dtype)}, name)
        self.exact_pieces = bool(exact_pieces)

    @classmethod
    def fields(cls, shape, fields: Mapping[str, object], name: str | None = None) -> Region:
        """A region with named fields, each its own array of `shape` (stored field by field).

        Args:
            shape: extents per dimension (shared by every field).
            fields: field name -> dtype, in order.
            name: the region's name.
        """
        if not fields:
            raise ValueError("Region.fields expects at least one field, e.g. {'a': np.float32}")
        for f in fields:
            if not isinstance(f, str) or not f:
                raise TypeError(f"Region.fields expects non-empty str field names, received {f!r}")
        self = cls.__new__(cls)
        self._setup(_check_shape(shape, "Region.fields"), {f: np.dtype(d) for f, d in fields.items()}, name)
        self.exact_pieces = False
        return self

    def _setup(self, shape, dtypes, name):
        self.uid = next(_region_ids)
        self.shape = shape
        self.name = name if name is not None else f"region{self.uid}"
        self.field_dtypes: dict[str | None, np.dtype] = dtypes
        self.field_names: tuple[str, ...] | None = None if None in dtypes else tuple(dtypes)
        self.dtype = dtypes[None] if None in dtypes else None
        self.root = self
        self.box: Box = box_of_shape(shape)
        self._slices = box_slices(self.box)
        self._whole = True
        self._part = None
        self._color = None
        self._empty = box_empty(self.box)
        self._contiguous = True
        self._volume = math.prod(shape)
        # runtime-owned state (see runtime.analysis.FieldState): who owns it, one state per field
        self._owner = None
        self._states = None
        self._fs0 = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * sum(d.itemsize for d in self.field_dtypes.values())

    def __repr__(self) -> str:
        if self.field_names is None:
            return f"Region({self.name!r}, {self.shape}, {self.dtype})"
        return f"Region({self.name!r}, {self.shape}, fields={list(self.field_names)})"


class Subregion:
    """The part of a region a partition assigns to one color. Get it with `P[color]`, not directly."""

    def __init__(self, partition: Partition, color: tuple[int, ...], box: Box):
        self.partition = partition
        self.color = color
        self.root: Region = partition.root
        self.box = box
        self.shape = box_shape(box)
        self._slices = box_slices(box)
        self._whole = box == self.root.box
        self._part = partition
        self._color = color
        self._empty = box_empty(box)
        self._contiguous = box_is_block(self.root.box, box)
        self._volume = math.prod(self.shape)
        self.name = f"{partition.parent.name}[{', '.join(map(str, color))}]"

    @property
    def dtype(self):
        return self.root.dtype

    @property
    def field_names(self):
        return self.root.field_names

    @property
    def field_dtypes(self):
        return self.root.field_dtypes

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        lo, hi = self.box
        rng = ", ".join(f"{a}:{b}" for a, b in zip(lo, hi, strict=True))
        return f"Subregion({self.name!r}, [{rng}])"


def overlaps(a, b) -> bool:
    """Whether two region-likes of the same root share a point (fast paths for the common cases)."""
    if a is b:
        return not a._empty
    if a._empty or b._empty:
        return False
    if a._whole or b._whole:
        return True
    pa = a._part
    if pa is not None and pa is b._part and pa.disjoint:
        return False
    return box_overlaps(a.box, b.box)


def contains(outer, inner) -> bool:
    """Whether region-like `outer` covers every point of `inner` (same root)."""
    return outer is inner or outer._whole or box_contains(outer.box, inner.box)


class Partition:
    """A map from colors to subregions of a parent region (or subregion).

    Build one with `Partition.equal`, `Partition.replicate` or `Partition.by_boxes`. `P[i, j]` (or
    `P[i]` when the remaining color dims have extent 1) is the Subregion of that color.

    Attributes:
        parent: the Region or Subregion that was partitioned.
        root: the Region at the top.
        color_shape: extents of the color space, e.g. (4, 1).
        colors: every color tuple in C order.
        disjoint: True when no two subregions share a point.
    """

    def __init__(self, parent, boxes: Sequence[Box], color_shape: tuple[int, ...], kind: str,
                 disjoint: bool | None = None):
        if not isinstance(parent, (Region, Subregion)):
            raise TypeError(f"Partition expects a Region or Subregion to partition, received {parent!r}")
        self.parent = parent
        self.root = parent.root
        self.kind = kind
        self.color_shape = tuple(color_shape)
        self.colors = tuple(itertools.product(*(range(c) for c in self.color_shape)))
        if len(self.colors) != len(boxes):
            raise ValueError(f"Partition of {parent.name!r}: {len(boxes)} boxes for {len(self.colors)} colors")
        if disjoint is None:
            disjoint = not any(box_overlaps(a, b) for a, b in itertools.combinations(boxes, 2))
        self.disjoint = disjoint
        self._subs = tuple(Subregion(self, c, b) for c, b in zip(self.colors, boxes, strict=True))
        self._by_color = dict(zip(self.colors, self._subs, strict=True))

    @classmethod
    def equal(cls, parent, degrees) -> Partition:
        """Split `parent` into equal blocks: `degrees[d]` pieces along dim d (sizes differ by at most 1).

        Args:
            parent: Region or Subregion.
            degrees: a degree per dim, e.g. (4, 1); an int splits dim 0 only.
        """
        nd = len(parent.shape)
        if isinstance(degrees, (int, np.integer)):
            degrees = (int(degrees),) + (1,) * (nd - 1)
        degrees = tuple(int(d) for d in degrees)
        if len(degrees) != nd or any(d < 1 for d in degrees):
            raise ValueError(f"Partition.equal({parent.name!r}) expects one positive degree per dim "
                             f"({nd} dims, shape {parent.shape}), received {degrees}")
        lo0 = parent.box[0]
        per_dim = [[(lo0[d] + a, lo0[d] + b) for a, b in equal_splits(parent.shape[d], degrees[d])]
                   for d in range(nd)]
        boxes = [(tuple(p[0] for p in combo), tuple(p[1] for p in combo))
                 for combo in itertools.product(*per_dim)]
        return cls(parent, boxes, degrees, "equal", disjoint=None)

    @classmethod
    def replicate(cls, parent, colors) -> Partition:
        """An aliased partition where every color is the whole parent (e.g. a replicated weight).

        Args:
            parent: Region or Subregion.
            colors: the number of colors, or a color shape tuple.
        """
        shape = (int(colors),) if isinstance(colors, (int, np.integer)) else tuple(int(c) for c in colors)
        if any(c < 1 for c in shape):
            raise ValueError(f"Partition.replicate({parent.name!r}) expects positive color extents, "
                             f"received {colors!r}")
        n = math.prod(shape)
        return cls(parent, [parent.box] * n, shape, "replicate", disjoint=n <= 1 or parent._empty)

    @classmethod
    def by_boxes(cls, parent, boxes) -> Partition:
        """A partition from explicit blocks, which may overlap (halos) or leave gaps.

        Args:
            parent: Region or Subregion.
            boxes: a sequence of index tuples of slices relative to `parent` (colors 0..n-1), or a
                mapping color tuple -> slices covering a full color space.
        """
        if isinstance(boxes, Mapping):
            colors = sorted(boxes)
            ndc = len(colors[0])
            shape = tuple(max(c[d] for c in colors) + 1 for d in range(ndc))
            if len(colors) != math.prod(shape):
                raise ValueError(f"Partition.by_boxes({parent.name!r}): colors must fill the color space "
                                 f"{shape}, received {colors}")
            items = [boxes[c] for c in itertools.product(*(range(s) for s in shape))]
        else:
            items = list(boxes)
            shape = (len(items),)
        return cls(parent, [_box_from_slices(parent, s) for s in items], shape, "by_boxes", disjoint=None)

    def __getitem__(self, color) -> Subregion:
        if not isinstance(color, tuple):
            color = (color,)
        if len(color) < len(self.color_shape) and all(c == 1 for c in self.color_shape[len(color):]):
            color = color + (0,) * (len(self.color_shape) - len(color))
        try:
            return self._by_color[tuple(int(c) for c in color)]
        except (KeyError, TypeError, ValueError):
            raise IndexError(f"Partition of {self.parent.name!r} has color shape {self.color_shape}; "
                             f"color {color!r} is outside it") from None

    def __len__(self) -> int:
        return len(self._subs)

    def __iter__(self):
        return iter(self._subs)

    @property
    def subregions(self) -> tuple[Subregion, ...]:
        return self._subs

    @property
    def name(self) -> str:
        return f"{self.kind}({self.parent.name}, {self.color_shape})"

    def __repr__(self) -> str:
        return f"Partition.{self.kind}({self.parent.name!r}, colors={self.color_shape}, disjoint={self.disjoint})"


def _box_from_slices(parent, sl) -> Box:
    if not isinstance(sl, tuple):
        sl = (sl,)
    shape = parent.shape
    if len(sl) > len(shape):
        raise ValueError(f"Partition.by_boxes({parent.name!r}): {sl!r} has more dims than shape {shape}")
    sl = sl + (slice(None),) * (len(shape) - len(sl))
    lo, hi = [], []
    for d, s in enumerate(sl):
        if not isinstance(s, slice):
            s = slice(int(s), int(s) + 1)
        start, stop, step = s.indices(shape[d])
        if step != 1:
            raise ValueError(f"Partition.by_boxes({parent.name!r}) takes unit-step slices, received {s!r}")
        off = parent.box[0][d]
        lo.append(off + start)
        hi.append(off + max(start, stop))
    return (tuple(lo), tuple(hi))
