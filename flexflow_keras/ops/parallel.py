"""Parallel rules of the operator IR: how an op's work may be split, and what each piece reads.

An op splits its (first) output into tiles: a degree per output dim, each dim of one of three kinds
(FlexFlow's SOAP): `SAMPLE` (the batch), `ATTRIBUTE` (height, width, sequence: parts of a sample) and
`PARAMETER` (output features, output channels, embedding width: the dims that split the weights). Some
ops may also split a contraction into partial results that the execution sums (`ParallelSpace.reduce`:
a Dense's input features, an embedding table's rows); the part index and count travel in the `Tile`.

Every op answers two pure questions (see `Op.parallel_space` and `Op.tile` in ops/base.py):
- `parallel_space(inputs, weights)`: per output dim, its kind and whether it may be split (with the
  reason when not), plus the extent of a splittable contraction;
- `tile(shapes, out_box, part, parts)`: for one output tile (a box in global coordinates of concrete
  shapes) the boxes of every input, weight, output, saved and statistics buffer it touches, and any
  op-specific local attributes (a convolution's per-side padding of its halo'd input).

The execution partitions regions by these boxes; the runtime orders and moves the data. Where the boxes
of an input (or weight) overlap between tiles, the gradients the tiles produce for it are partial sums,
which the execution reduces with ``+``. This module has the values and the helpers shared by the rules.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from flexflow_keras.errors import StrategyError

Box = tuple[tuple[int, ...], tuple[int, ...]]

SAMPLE = "sample"
ATTRIBUTE = "attribute"
PARAMETER = "parameter"
KINDS = (SAMPLE, ATTRIBUTE, PARAMETER)


@dataclass(frozen=True)
class DimRule:
    """One output dim: its kind, and whether a degree above 1 is legal (`why` says why not)."""

    kind: str
    splittable: bool = True
    why: str = ""


@dataclass(frozen=True)
class ParallelSpace:
    """What an op allows: a `DimRule` per output dim (with the extent, None for the batch), and the
    extent of a contraction that may be split into summed partial results (`reduce`, None: none)."""

    dims: tuple[DimRule, ...]
    extents: tuple[int | None, ...]
    reduce: int | None = None
    reduce_what: str = ""
    reduce_why: str = ""

    def legal(self, dim: int) -> str:
        """The legal degrees of `dim` in words (for errors)."""
        rule, extent = self.dims[dim], self.extents[dim]
        if not rule.splittable:
            return f"1 only ({rule.why})" if rule.why else "1 only"
        if extent is None:
            return "any positive degree (the batch; a smaller last batch uses fewer pieces)"
        return f"1 to {extent}"

    def check_degree(self, op_name: str, dim: int, degree: int) -> None:
        """Raise StrategyError unless `degree` is legal for output dim `dim`."""
        rule, extent = self.dims[dim], self.extents[dim]
        ok = degree >= 1 and (degree == 1 or (rule.splittable and (extent is None or degree <= extent)))
        if not ok:
            raise StrategyError(
                f"Strategy for op '{op_name}': output dim {dim} ({rule.kind}, extent "
                f"{'batch' if extent is None else extent}) cannot take degree {degree}; legal: "
                f"{self.legal(dim)}.")

    def check_reduce(self, op_name: str, parts: int) -> None:
        """Raise StrategyError unless `parts` partial results are legal for this op."""
        if parts == 1:
            return
        if self.reduce is None or parts < 1 or parts > self.reduce:
            why = self.reduce_why or "it has no contraction that can be split into partial sums"
            legal = f"1 to {self.reduce} (splits its {self.reduce_what})" if self.reduce else f"1 only ({why})"
            raise StrategyError(f"Strategy for op '{op_name}' asks for reduce={parts}; legal: {legal}.")


@dataclass(frozen=True)
class TileShapes:
    """Concrete shapes of everything one op node touches, for one batch size."""

    inputs: tuple[tuple[int, ...], ...]
    weights: tuple[tuple[int, ...], ...]
    outputs: tuple[tuple[int, ...], ...]
    saved: tuple[tuple[int, ...], ...] = ()
    stats: tuple[tuple[int, ...], ...] = ()


def tile_shapes(node, batch: int, training: bool = True) -> TileShapes:
    """The concrete `TileShapes` of op node `node` at global batch `batch`: each tensor's open dims hold its
    rows (`graph.batch_rows`: k per sample after a reshape that folds blocks into the batch), the saved
    and statistics buffers those of the node's inputs (`graph.node_rows`)."""
    from flexflow_keras.ops.graph import batch_rows, node_rows

    def conc(spec, rows):
        return tuple(rows if d is None else int(d) for d in spec.shape)

    ins = [t.spec for t in node.inputs]
    ws = [w.spec for w in node.weights]
    rows = node_rows(node, batch)
    return TileShapes(tuple(conc(t.spec, batch_rows(t, batch)) for t in node.inputs), tuple(tuple(w.shape) for w in ws),
                      tuple(conc(t.spec, batch_rows(t, batch)) for t in node.outputs),
                      tuple(conc(s, rows) for s in node.op.saved_specs(ins, ws)),
                      tuple(conc(s, rows) for s in node.op.stats_specs(ins, ws, training)))


def row_units(t) -> tuple[int, ...]:
    """Per dim of tensor `t`: the rows of one sample along its open (None) dim (its `batch_scale`: k after a
    reshape folded k blocks of each sample into the batch), 1 along the others; a split cuts only between
    samples, so a piece of a folded tensor holds the blocks of the same samples as the pieces around it."""
    scale = int(getattr(t, "batch_scale", 1) or 1)
    return tuple(scale if d is None else 1 for d in t.spec.shape)


@dataclass(frozen=True)
class Tile:
    """One piece of an op's work: boxes (global coordinates) of what it reads and writes.

    `part`/`parts`: its index among the partial results of a split contraction (1 part: none).
    `local`: op-specific attributes of this piece as sorted (name, value) pairs (hashable).
    """

    inputs: tuple[Box, ...]
    weights: tuple[Box, ...]
    outputs: tuple[Box, ...]
    saved: tuple[Box, ...] = ()
    stats: tuple[Box, ...] = ()
    part: int = 0
    parts: int = 1
    local: tuple[tuple[str, object], ...] = ()

    def get(self, name: str, default=None):
        """An op-specific local attribute."""
        for k, v in self.local:
            if k == name:
                return v
        return default

    def origin(self, dim: int = 0) -> int:
        """The global start of output 0's tile along `dim` (e.g. the first sample's index)."""
        lo = self.outputs[0][0]
        return lo[dim] if dim < len(lo) else 0


# --- helpers for the rules -------------------------------------------------------------------------------
def dims_by_extent(extents: Sequence[int | None], why: str = "", kinds: dict[int, str] | None = None,
                   fixed: Sequence[int] = ()) -> tuple[DimRule, ...]:
    """Rules for every dim: the batch (extent None) is SAMPLE, the rest ATTRIBUTE unless `kinds` says
    otherwise; dims in `fixed` may not be split (`why` says why)."""
    kinds = kinds or {}
    out = []
    for d, e in enumerate(extents):
        kind = kinds.get(d, SAMPLE if e is None else ATTRIBUTE)
        if d in fixed:
            out.append(DimRule(kind, False, why))
        else:
            out.append(DimRule(kind, True))
    return tuple(out)


def sample_only(extents: Sequence[int | None], who: str) -> tuple[DimRule, ...]:
    """Only the batch dim may be split (the default for ops without finer rules)."""
    why = f"{who} splits only along the batch"
    return tuple(DimRule(SAMPLE, True) if e is None else DimRule(ATTRIBUTE, False, why) for e in extents)


def whole(shape: Sequence[int]) -> Box:
    """The box of a whole array."""
    return (tuple(0 for _ in shape), tuple(int(s) for s in shape))


def broadcast_box(shape: Sequence[int], out_shape: Sequence[int], out_box: Box) -> Box:
    """The box of an input that broadcasts (NumPy rules) to `out_shape`, read by the tile `out_box`."""
    lo, hi = out_box
    off = len(out_shape) - len(shape)
    blo, bhi = [], []
    for d, s in enumerate(shape):
        od = d + off
        if od >= 0 and s == out_shape[od]:
            blo.append(lo[od])
            bhi.append(hi[od])
        else:
            blo.append(0)
            bhi.append(int(s))
    return (tuple(blo), tuple(bhi))


def with_dims(box: Box, dims: dict[int, tuple[int, int]]) -> Box:
    """`box` with the ranges of some dims replaced."""
    lo, hi = list(box[0]), list(box[1])
    for d, (a, b) in dims.items():
        lo[d], hi[d] = a, b
    return (tuple(lo), tuple(hi))


def take_dims(box: Box, dims: Sequence[int]) -> Box:
    """The ranges of `dims` of `box`, in that order."""
    return (tuple(box[0][d] for d in dims), tuple(box[1][d] for d in dims))


def split_range(extent: int, parts: int, part: int) -> tuple[int, int]:
    """The `part`-th of `parts` near-equal contiguous pieces of [0, extent) (larger pieces first)."""
    base, extra = divmod(int(extent), int(parts))
    lo = part * base + min(part, extra)
    return lo, lo + base + (1 if part < extra else 0)


def tile_boxes(shape: Sequence[int], degrees: Sequence[int], units: Sequence[int] | None = None) -> list[Box]:
    """The boxes of an equal split of `shape` by `degrees`, in C order of the colors; a dim with a unit
    above 1 (`row_units`: k rows per sample of a folded tensor) is cut only between whole units."""
    units = units or (1,) * len(shape)

    def cut(s, d, k, u):
        if u <= 1 or s % u:
            return split_range(s, d, k)
        lo, hi = split_range(s // u, d, k)
        return lo * u, hi * u

    per_dim = [[cut(s, d, k, u) for k in range(d)] for s, d, u in zip(shape, degrees, units, strict=True)]
    return [(tuple(r[0] for r in combo), tuple(r[1] for r in combo)) for combo in itertools.product(*per_dim)]


def default_tile(shapes: TileShapes, out_box: Box, weights_whole: bool = True) -> Tile:
    """Inputs by broadcasting against output 0, weights whole, other outputs and saved buffers by
    broadcasting too (a buffer of output 0's shape follows the tile), statistics whole."""
    out0 = shapes.outputs[0]
    ins = tuple(broadcast_box(s, out0, out_box) for s in shapes.inputs)
    outs = tuple(broadcast_box(s, out0, out_box) for s in shapes.outputs)
    saved = tuple(broadcast_box(s, out0, out_box) for s in shapes.saved)
    return Tile(ins, tuple(whole(s) for s in shapes.weights), outs, saved, tuple(whole(s) for s in shapes.stats))


def window_range(o0: int, o1: int, n_out: int, size: int, window: int, stride: int,
                 pad: int) -> tuple[int, int, int, int]:
    """For output rows [o0, o1) of `n_out` of a sliding window op (global top pad `pad`), the input rows
    to read [i0, i1) and the local (top, bottom) padding of that piece.

    The first piece starts at row 0 and the last ends at `size`, so the pieces cover every input row
    (rows no window reads get a zero gradient, as in the unsplit op); the kernel's output-size floor
    absorbs the fewer than `stride` extra rows this may add.
    """
    i0 = 0 if o0 == 0 else max(0, o0 * stride - pad)
    i1 = size if o1 >= n_out else min(size, (o1 - 1) * stride - pad + window)
    top = max(0, pad - o0 * stride)
    bottom = max(0, (o1 - o0 - 1) * stride + window - (i1 - i0) - top)
    return i0, i1, top, bottom


def spatial_tile(in_shape: Sequence[int], out_shape: Sequence[int], out_box: Box, window: tuple[int, int],
                 strides: tuple[int, int], pads: tuple[int, int],
                 channels: tuple[int, int] | None) -> tuple[Box, tuple]:
    """The input box (NHWC) and the local explicit padding ((top, bottom), (left, right)) of a window op's
    output tile. `pads` is the global (top, left) padding; `channels` the input channel range (None:
    all channels)."""
    lo, hi = out_box
    rows, local = [], []
    for d, (k, s, p) in enumerate(zip(window, strides, pads, strict=True)):
        i0, i1, top, bottom = window_range(lo[1 + d], hi[1 + d], int(out_shape[1 + d]), int(in_shape[1 + d]),
                                           k, s, p)
        rows.append((i0, i1))
        local.append((top, bottom))
    c0, c1 = channels if channels is not None else (0, int(in_shape[3]))
    box = ((lo[0], rows[0][0], rows[1][0], c0), (hi[0], rows[0][1], rows[1][1], c1))
    return box, (local[0], local[1])


def check_parallel(op, op_name: str, inputs, weights, degrees: Sequence[int], parts: int = 1) -> ParallelSpace:
    """Check a config's degrees (one per output dim) and partial-result count against `op`'s rules.

    Raises:
        StrategyError: naming the op, the dim, the degree asked and the legal choices.
    """
    space = op.parallel_space(inputs, weights)
    if len(degrees) != len(space.dims):
        raise StrategyError(f"Strategy for op '{op_name}' gives {len(degrees)} degrees {list(degrees)}, but its "
                            f"output has {len(space.dims)} dims (shape "
                            f"{tuple('None' if e is None else e for e in space.extents)}); give one degree "
                            f"per output dim, batch first.")
    for d, deg in enumerate(degrees):
        space.check_degree(op_name, d, int(deg))
    space.check_reduce(op_name, int(parts))
    return space


def elementwise_space(op, inputs, weights) -> ParallelSpace:
    """Every output dim may be split: the batch is SAMPLE, the rest ATTRIBUTE (element-wise ops; inputs
    follow by broadcasting)."""
    extents = tuple(op.output_specs(inputs, weights)[0].shape)
    return ParallelSpace(dims_by_extent(extents), extents)


def space_except(op, inputs, weights, fixed: Sequence[int], why: str,
                 kinds: dict[int, str] | None = None) -> ParallelSpace:
    """Every output dim but those in `fixed` may be split (`why` says why those may not)."""
    extents = tuple(op.output_specs(inputs, weights)[0].shape)
    n = len(extents)
    return ParallelSpace(dims_by_extent(extents, why, kinds, [d % n for d in fixed]), extents)


def reduction_tile(shapes: TileShapes, out_box: Box, kept: Sequence[int]) -> Tile:
    """The tile of a reduction of input 0: `kept[i]` is the input dim output dim i comes from (-1 for a
    reduced dim kept with size 1); a piece reads its own range of the kept dims and the reduced dims whole."""
    x = shapes.inputs[0]
    lo, hi = [0] * len(x), list(x)
    for i, d in enumerate(kept):
        if d >= 0:
            lo[d], hi[d] = out_box[0][i], out_box[1][i]
    return Tile(((tuple(lo), tuple(hi)),), (), (out_box,))
