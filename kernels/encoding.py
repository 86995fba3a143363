"""Category encoding kernels (CategoryEncoding): integer ids to one-hot, multi-hot or count vectors.

Ids arrive as a (rows, width) block: one-hot encodes every id to its own row (width 1), multi-hot and
count fold each row's ids into one vector. The output has no gradient (ids are not differentiable).
"""

from __future__ import annotations

import numpy as np

from kernels._jit import cpu_jit

MULTI_HOT, COUNT = 0, 1
MODES = {"one_hot": MULTI_HOT, "multi_hot": MULTI_HOT, "count": COUNT}


@cpu_jit
def _encode(ids, y, mode):
    rows, width = ids.shape
    n = y.shape[1]
    bad = -1
    for r in range(rows):
        for j in range(n):
            y[r, j] = 0.0
        for k in range(width):
            v = ids[r, k]
            if v < 0 or v >= n:
                if bad < 0:
                    bad = r * width + k
                continue
            if mode == COUNT:
                y[r, v] += 1.0
            else:
                y[r, v] = 1.0
    return bad


def category_encode_cpu(ids: np.ndarray, y: np.ndarray, mode: int) -> int:
    """Write the encoding of `ids` into `y`; returns the flat index of the first id outside
    ``[0, y.shape[-1])`` (skipped) or -1.

    Args:
        ids: integer (or integral float) ids; their trailing dim is folded into one vector of y (one-hot:
            pass ids with a trailing dim of 1). y: preallocated float output (ids.shape[:-1], num_tokens).
        mode: `MULTI_HOT` (one-hot too) or `COUNT`.
    """
    n = y.shape[-1]
    width = ids.shape[-1] if ids.ndim else 1
    ids2 = np.ascontiguousarray(ids).reshape(-1, width)
    if ids2.dtype.kind not in "iu":
        ids2 = ids2.astype(np.int64)
    return int(_encode(ids2, y.reshape(-1, n), int(mode)))


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import encoding as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
