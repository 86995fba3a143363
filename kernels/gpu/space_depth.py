"""CUDA twins of `kernels.space_depth`: one thread per element of the wide (N, H*b, W*b, C) array, which
reads (depth_to_space) or writes (space_to_depth) its element of the deep (N, H, W, b*b*C) array. Both
directions are permutations, so no two threads write one element and no atomics are needed."""

from __future__ import annotations

from numba import cuda

from kernels.gpu import launch


@cuda.jit
def _rearrange(src, dst, block, to_wide, accumulate):
    t = cuda.grid(1)
    wide = dst if to_wide else src
    deep = src if to_wide else dst
    if t < wide.size:
        _, hb, wb, c = wide.shape
        ch = t % c
        j = (t // c) % wb
        i = (t // (c * wb)) % hb
        n = t // (c * wb * hb)
        d = ((i % block) * block + j % block) * c + ch  # the channel of the deep array this element is in
        h, w = i // block, j // block
        if to_wide:
            v = deep[n, h, w, d]
            dst[n, i, j, ch] = dst[n, i, j, ch] + v if accumulate else v
        else:
            v = wide[n, i, j, ch]
            dst[n, h, w, d] = dst[n, h, w, d] + v if accumulate else v


def rearrange(src, dst, block: int, to_wide: bool, accumulate: bool) -> None:
    """dst (+)= src rearranged: depth_to_space when `to_wide` (dst is the wide array), else space_to_depth."""
    launch(_rearrange, dst.size, src, dst, block, to_wide, accumulate)
