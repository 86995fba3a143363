"""`pad_sequences`: lists of token ids to one padded 2-D array (Keras' `utils.pad_sequences`)."""

from __future__ import annotations

import numpy as np


def pad_sequences(sequences, maxlen: int | None = None, dtype: str = "int32", padding: str = "pre",
                  truncating: str = "pre", value: float = 0.0) -> np.ndarray:
    """Pad (or cut) each sequence to `maxlen`, as Keras does.

    Args:
        sequences: a list of sequences (each a list or array of numbers, possibly with trailing dims).
        maxlen: length of the output rows; the longest sequence when None.
        dtype: dtype of the result.
        padding: ``"pre"`` or ``"post"``: where to add `value`.
        truncating: ``"pre"`` or ``"post"``: which end to drop from sequences longer than `maxlen`.
        value: the padding value.

    Returns:
        An array of shape ``(len(sequences), maxlen) + trailing_dims``.
    """
    for arg, val in (("padding", padding), ("truncating", truncating)):
        if val not in ("pre", "post"):
            raise ValueError(f"pad_sequences expects {arg}='pre' or 'post', received {arg}={val!r}.")
    if not hasattr(sequences, "__len__"):
        raise ValueError("pad_sequences expects a list of sequences, received "
                         f"{type(sequences).__name__}.")
    seqs = [np.asarray(s) for s in sequences]
    lengths = [len(s) for s in seqs]
    if maxlen is None:
        maxlen = max(lengths) if lengths else 0
    trailing: tuple[int, ...] = ()
    for s in seqs:
        if len(s):
            trailing = s.shape[1:]
            break
    is_text = np.dtype(dtype).kind in "USO"
    if isinstance(value, str) and not is_text:
        raise ValueError(f"pad_sequences: value={value!r} is a string but dtype={dtype!r} is numeric; "
                         "pass dtype=object or a numeric value.")
    out = np.full((len(seqs), maxlen) + trailing, value, dtype=dtype)
    for i, s in enumerate(seqs):
        if not len(s) or maxlen == 0:
            continue
        cut = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        if cut.shape[1:] != trailing:
            raise ValueError(f"pad_sequences: sequence {i} has trailing shape {cut.shape[1:]}, expected "
                             f"{trailing} like the first non-empty sequence.")
        if padding == "post":
            out[i, :len(cut)] = cut
        else:
            out[i, maxlen - len(cut):] = cut
    return out
