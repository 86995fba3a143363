"""`sample_weight` as the training loop hands it to the step's loader (Keras 3 semantics).

A weight is one array for every output (shape (n,), or (n, T) for a temporal output: one weight per
timestep), or, for a model with several outputs, a list/dict (by output name) with one array (or None:
ones) per output. The loader turns the weight of each output with a loss into that loss's seed, so the
loss is ``sum(loss * weight) / elements`` (Keras' "sum_over_batch_size"); only `weighted_metrics` see it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from flexflow_keras.errors import DataError


def _one(w, n: int, out_shape, name: str) -> np.ndarray:
    w = np.asarray(w, dtype=np.float32)
    if w.ndim == 0 or len(w) != n:
        raise DataError(f"sample_weight for output '{name}' has shape {w.shape}; expected {n} entries (one per "
                        f"sample of x).")
    if w.ndim == 2 and w.shape[1] == 1:
        w = w[:, 0]
    if w.ndim > 1:  # temporal weights: a prefix of the output's per-sample shape, e.g. (n, T) for (n, T, C)
        want = tuple(out_shape[1:w.ndim]) if out_shape is not None else None
        if want is None or len(want) != w.ndim - 1 or any(a is not None and a != b
                                                          for a, b in zip(want, w.shape[1:], strict=True)):
            raise DataError(f"sample_weight for output '{name}' has shape {w.shape}, but the output has shape "
                            f"{tuple(out_shape) if out_shape is not None else '?'}. Pass one weight per sample "
                            f"(shape ({n},)) or per timestep (shape ({n}, {', '.join(map(str, want or ()))})).")
    return np.ascontiguousarray(w)


def normalize(sample_weight, out_names: Sequence[str], out_shapes: Sequence, n: int):
    """None, one array for all outputs, or a tuple with one array (or None) per output.

    Args:
        sample_weight: what the user passed (array, list/tuple per output, dict by output name, or None).
        out_names: the model's output names.
        out_shapes: the outputs' shapes (batch dim first, may be None).
        n: the number of samples of x.

    Raises:
        DataError: for a wrong length, shape or key, naming the output.
    """
    if sample_weight is None:
        return None
    several = len(out_names) > 1
    if isinstance(sample_weight, Mapping):
        unknown = sorted(set(sample_weight) - set(out_names))
        if unknown:
            raise DataError(f"sample_weight has keys {unknown} that are not outputs of the model; outputs: "
                            f"{list(out_names)}.")
        per = [sample_weight.get(k) for k in out_names]
    elif several and isinstance(sample_weight, (list, tuple)) and len(sample_weight) == len(out_names) and \
            all(w is None or np.ndim(w) >= 1 for w in sample_weight) and len(sample_weight) != n:
        per = list(sample_weight)
    else:
        shapes = {tuple(s[1:]) if s is not None else None for s in out_shapes}
        return _one(sample_weight, n, out_shapes[0] if len(shapes) == 1 else None, out_names[0])
    return tuple(None if w is None else _one(w, n, s, k)
                 for w, s, k in zip(per, out_shapes, out_names, strict=True))


def take(sw, sl):
    """`sw` restricted to the samples `sl` (a slice or an index array)."""
    if sw is None:
        return None
    if isinstance(sw, tuple):
        return tuple(None if w is None else w[sl] for w in sw)
    return sw[sl]


def scale(sw, w: np.ndarray):
    """`sw` times per-sample weights `w` (shape (n,)); `w` alone when `sw` is None."""
    if sw is None:
        return w
    if isinstance(sw, tuple):
        return tuple(w if a is None else a * w.reshape((-1,) + (1,) * (a.ndim - 1)) for a in sw)
    return sw * w.reshape((-1,) + (1,) * (sw.ndim - 1))


def for_losses(sw, n: int, loss_outputs: Sequence[int]):
    """The source entry the loader reads: one array for all losses, or a tuple per loss output."""
    if sw is None:
        return np.ones(n, np.float32)
    if isinstance(sw, tuple):
        return tuple(np.ones(n, np.float32) if sw[i] is None else sw[i] for i in loss_outputs)
    return sw
