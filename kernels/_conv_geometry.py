"""Window geometry shared by the convolution and pooling kernels: argument normalisation, output sizes and
TensorFlow's "same" padding split (the odd pixel goes to the bottom/right).
"""

from __future__ import annotations

PADDINGS = ("valid", "same")


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


def out_size(size: int, window: int, stride: int, padding: str) -> int:
    """Output length along one dim (TensorFlow/Keras rule); may be <= 0 for a too-small valid input."""
    if padding == "same":
        return -(-size // stride)
    return (size - window) // stride + 1 if size >= window else 0


def pads(size: int, window: int, stride: int, padding: str) -> tuple[int, int]:
    """(before, after) padding along one dim: TensorFlow's split, the extra pixel after."""
    if padding == "valid":
        return 0, 0
    out = out_size(size, window, stride, padding)
    total = max((out - 1) * stride + window - size, 0)
    return total // 2, total - total // 2


def window_geometry(h: int, w: int, window: tuple[int, int], strides: tuple[int, int],
                    padding: str) -> tuple[int, int, int, int, int, int]:
    """(out_h, out_w, pad_top, pad_bottom, pad_left, pad_right) for an NHWC spatial window op."""
    oh = out_size(h, window[0], strides[0], padding)
    ow = out_size(w, window[1], strides[1], padding)
    pt, pb = pads(h, window[0], strides[0], padding)
    pl, pr = pads(w, window[1], strides[1], padding)
    return oh, ow, pt, pb, pl, pr
