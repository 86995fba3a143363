"""Window geometry shared by the convolution and pooling kernels: argument normalisation, output sizes and
padding offsets.

Padding is "valid", "same" (TensorFlow's split: the odd pixel goes to the bottom/right) or, for the
kernels only, explicit per-side pads ``((top, bottom), (left, right))`` of non-negative ints. Explicit
pads let the runtime run one spatial tile of an op on the input rows/columns it needs (a halo): the
output size is ``(size + before + after - window) // stride + 1`` and output index ``i`` reads input
``i * stride + a - before``, so a tile given its halo'd slice and the right pads computes exactly its
slice of the whole output. Trailing input rows that no window reads are absorbed by the floor.
Layers accept only "valid" / "same" (`check_padding`); the kernels go through `check_window_padding`.
"""

from __future__ import annotations

import operator

PADDINGS = ("valid", "same")

# "valid", "same", or explicit ((top, bottom), (left, right))
Padding = str | tuple[tuple[int, int], tuple[int, int]]


def pair(value, who: str, arg: str) -> tuple[int, int]:
    """`value` as a pair of positive ints (an int means the same for both spatial dims).

    Raises:
        ValueError: naming `who` and `arg` when the value is not one or two positive integers.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        vals = (value, value)
    else:
        try:
            vals = tuple(int(v) for v in value)
        except TypeError:
            vals = ()
        if len(vals) != 2 or any(isinstance(v, bool) for v in value):
            raise ValueError(f"{who} expects {arg} to be an int or a pair of ints, received {arg}={value!r}.")
    if vals[0] < 1 or vals[1] < 1:
        raise ValueError(f"{who} expects positive values for {arg}, received {arg}={value!r}.")
    return vals


def check_padding(padding, who: str) -> str:
    """The padding string in lower case; raises ValueError naming `who` when it is not valid/same."""
    p = padding.lower() if isinstance(padding, str) else padding
    if p not in PADDINGS:
        raise ValueError(f"{who} expects padding to be 'valid' or 'same', received padding={padding!r}.")
    return p


def _explicit(padding) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """((top, bottom), (left, right)) as ints when `padding` is two pairs of non-negative ints, else None."""
    try:
        if len(padding) != 2 or any(len(p) != 2 for p in padding):
            return None
        vals = [operator.index(v) for p in padding for v in p if not isinstance(v, bool)]
    except TypeError:
        return None
    if len(vals) != 4 or min(vals) < 0:
        return None
    return (vals[0], vals[1]), (vals[2], vals[3])


def check_window_padding(padding, who: str) -> Padding:
    """The kernels' padding: "valid" / "same" in lower case, or explicit ((top, bottom), (left, right)).

    Raises:
        ValueError: naming `who`, when `padding` is neither a known string nor two pairs of
            non-negative ints.
    """
    if isinstance(padding, str):
        return check_padding(padding, who)
    pads_ = _explicit(padding)
    if pads_ is None:
        raise ValueError(f"{who} expects padding to be 'valid', 'same' or explicit pads ((top, bottom), "
                         f"(left, right)) of non-negative ints, received padding={padding!r}.")
    return pads_


def out_size(size: int, window: int, stride: int, padding) -> int:
    """Output length along one dim; may be <= 0 when the window does not fit.

    `padding` is "valid", "same" (TensorFlow/Keras rule) or this dim's explicit (before, after) pads.
    """
    if padding == "same":
        return -(-size // stride)
    before, after = (0, 0) if isinstance(padding, str) else padding
    padded = size + before + after
    return (padded - window) // stride + 1 if padded >= window else 0


def pads(size: int, window: int, stride: int, padding) -> tuple[int, int]:
    """(before, after) padding along one dim: TensorFlow's split for "same" (the extra pixel after), the
    pair itself for explicit (before, after) pads."""
    if padding == "valid":
        return 0, 0
    if not isinstance(padding, str):
        return int(padding[0]), int(padding[1])
    out = out_size(size, window, stride, padding)
    total = max((out - 1) * stride + window - size, 0)
    return total // 2, total - total // 2


def window_geometry(h: int, w: int, window: tuple[int, int], strides: tuple[int, int],
                    padding: Padding) -> tuple[int, int, int, int, int, int]:
    """(out_h, out_w, pad_top, pad_bottom, pad_left, pad_right) for an NHWC spatial window op; `padding`
    is "valid", "same" or explicit ((top, bottom), (left, right))."""
    ph, pw = (padding, padding) if isinstance(padding, str) else padding
    oh = out_size(h, window[0], strides[0], ph)
    ow = out_size(w, window[1], strides[1], pw)
    pt, pb = pads(h, window[0], strides[0], ph)
    pl, pr = pads(w, window[1], strides[1], pw)
    return oh, ow, pt, pb, pl, pr

