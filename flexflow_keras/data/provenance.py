"""Which training data is synthetic: a process-wide record of what the synthetic generators handed out.

A script turns the loader's arrays into new ones (``x.reshape(-1, 784).astype("float32") / 255``,
``to_categorical(y)``), so neither identity nor values survive. What does survive is the sample count
(up to a prefix: the train split, `validation_split`), the number of values per sample, and the labels
(class ids; one-hot rows give them back by argmax). `record` keeps, per synthetic data set, its values
per sample and its class ids; `synthetic_name` says whether arrays given to fit are such data: same
values per sample, and the first labels found, in order, in the recorded ids (64 ids of 10 classes
cannot match by chance). Arrays without labels are not recognised.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

PROBE = 64  # labels compared; enough that real data never matches by accident

MIN_PROBE = 16  # fewer labels than this are never recognised (a chance match is then possible)
MAX_RECORDS = 16
NOTE = "synthetic"


@dataclass(frozen=True)
class _Record:
    name: str
    per_sample: int | None  # None: any (sequences a script pads to its own length)
    ids: np.ndarray  # int64 class ids of every sample the generator made, in order


_records: list[_Record] = []
_lock = threading.Lock()


def class_ids(y) -> np.ndarray | None:
    """Per-sample integer class ids of a label array (argmax of one-hot rows), or None if not labels."""
    y = np.asarray(y)
    if y.ndim == 0 or len(y) == 0:
        return None
    if y.ndim > 1 and y.shape[-1] > 1 and y.ndim == 2:
        return np.argmax(y, axis=-1).astype(np.int64)
    flat = y.reshape(len(y), -1)
    if flat.shape[1] != 1 or (y.dtype.kind == "f" and not np.all(flat == np.round(flat))):
        return None
    return flat[:, 0].astype(np.int64)


def record(name: str, x, labels, any_width: bool = False) -> None:
    """Note that a synthetic generator handed out samples `x` with class ids `labels`.

    Args:
        name: the data set, for the log.
        x: the samples (a leading sample dimension).
        labels: their labels (class ids or one-hot rows).
        any_width: match whatever the values per sample (sequences a script pads itself).
    """
    ids = class_ids(labels)
    if ids is None or len(x) != len(ids):
        return
    per_sample = None if any_width else int(np.prod(np.shape(x)[1:], dtype=np.int64))
    rec = _Record(name, per_sample, ids.copy())
    with _lock:
        _records[:] = _records[-(MAX_RECORDS - 1):] + [rec]


def forget() -> None:
    """Drop every record (tests)."""
    with _lock:
        _records.clear()


def _contains(ids: np.ndarray, probe: np.ndarray) -> bool:
    k = len(probe)
    if k > len(ids):
        return False
    starts = np.flatnonzero(ids[: len(ids) - k + 1] == probe[0])
    return any(np.array_equal(ids[s:s + k], probe) for s in starts[:4096])


def synthetic_name(xs, ys) -> str | None:
    """The name of the synthetic data set that arrays `xs` (inputs) and `ys` (labels) come from, or None."""
    with _lock:
        records = list(_records)
    if not records or not xs or not ys:
        return None
    x = np.asarray(xs[0])
    ids = class_ids(ys[0])
    if ids is None or x.ndim == 0 or len(x) != len(ids):
        return None
    per_sample = int(np.prod(x.shape[1:], dtype=np.int64))
    probe = ids[:PROBE]
    if len(probe) < MIN_PROBE:
        return None
    for rec in records:
        if rec.per_sample in (None, per_sample) and len(ids) <= len(rec.ids) and _contains(rec.ids, probe):
            return rec.name
    return None


def fit_note(generated: bool, xs, ys) -> str | None:
    """What fit's progress lines say about the data: "synthetic" when fit made it (`generated`: no x, y
    and no -d) or when `xs`/`ys` are a synthetic data set's arrays; None otherwise."""
    if generated or synthetic_name(xs, ys) is not None:
        return NOTE
    return None
