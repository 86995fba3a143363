"""The search space: the candidate configs of one op on a machine of `n` devices.

For every piece count k in 1, 2, 4, ... up to n (and n itself): each splittable output dim split k ways
(when its extent allows), the batch and one other dim split together (k >= 4), and the op's contraction
split into k partial sums where it has one; each placed on an aligned block of k consecutive devices
(offsets 0, k, 2k, ...). A single piece may sit on any device (operator placement). Configs are ordered
deterministically, so a seeded search draws the same sequence every time.
"""

from __future__ import annotations

from flexflow_keras.ops.strategy import ParallelConfig, node_space


def piece_counts(n: int) -> list[int]:
    out, k = [], 1
    while k <= n:
        out.append(k)
        k *= 2
    if n not in out:
        out.append(n)
    return out


def config_space(node, n: int, batch: int) -> list[ParallelConfig]:
    """Every candidate config of `node` on `n` devices at global batch `batch` (see the module doc)."""
    space = node_space(node)
    nd = len(space.dims)
    splittable = [d for d in range(nd) if space.dims[d].splittable]

    def extent(d: int) -> int:
        e = space.extents[d]
        return batch if e is None else e

    shapes: list[tuple[tuple[int, ...], int]] = [((1,) * nd, 1)]
    for k in piece_counts(n)[1:]:
        for d in splittable:
            if extent(d) >= k:
                deg = [1] * nd
                deg[d] = k
                shapes.append((tuple(deg), 1))
        if k >= 4:
            sample = [d for d in splittable if space.extents[d] is None]
            for s in sample:
                for d in splittable:
                    if d == s:
                        continue
                    a, b = 2, k // 2
                    if extent(s) >= a and extent(d) >= b:
                        deg = [1] * nd
                        deg[s], deg[d] = a, b
                        shapes.append((tuple(deg), 1))
        if space.reduce is not None and space.reduce >= k:
            shapes.append(((1,) * nd, k))
    out: list[ParallelConfig] = []
    seen = set()
    for degrees, reduce in shapes:
        k = reduce
        for g in degrees:
            k *= g
        offsets = range(n) if k == 1 else range(0, n - k + 1, k)
        for off in offsets:
            cfg = ParallelConfig(degrees, tuple(range(off, off + k)), reduce)
            if cfg not in seen:
                seen.add(cfg)
                out.append(cfg)
    return out
