"""A CSV file for ``-d``: a header row, numeric feature columns and one label column, named label, labels,
y, target or class (any case), else the last column. Integer labels are class ids; text labels become
ids in sorted order (their names kept); other numbers are regression targets. A non-numeric feature cell
is an error naming its line and column.

An all-numeric file is parsed by NumPy's C reader (``np.loadtxt``); a file it refuses (text labels, a
bad cell, ragged rows) is read row by row with the csv module, which finds the offending cell.
"""

from __future__ import annotations

import csv
import warnings

import numpy as np

from flexflow_keras.data.formats.base import DatasetFile, read_fix
from flexflow_keras.errors import DataError

LABEL_NAMES = ("label", "labels", "y", "target", "class")


def _label_column(header: list[str]) -> int:
    lowered = [h.strip().lower() for h in header]
    for name in LABEL_NAMES:
        if name in lowered:
            return lowered.index(name)
    return len(header) - 1


def _numeric_labels(values: np.ndarray) -> np.ndarray:
    """Class ids (int64) when every value is a non-negative whole number, else float32 targets."""
    if len(values) and np.all(np.isfinite(values)) and np.all(values == np.round(values)) and values.min() >= 0:
        return values.astype(np.int64)
    return values.astype(np.float32)


def _text_labels(cells: list[str]) -> tuple[np.ndarray, list[str] | None]:
    try:
        return _numeric_labels(np.array([float(c) for c in cells])), None
    except ValueError:
        names = sorted(set(cells))
        index = {n: i for i, n in enumerate(names)}
        return np.array([index[c] for c in cells], np.int64), names


def _rows(path: str, header_only: bool = False) -> list[list[str]]:
    """The non-blank rows (or just the first) by the csv module."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = (r for r in csv.reader(f) if any(c.strip() for c in r))
            return [next(rows, [])] if header_only else list(rows)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise DataError(f"-d/--dataset {path}: cannot read the CSV file: {e}. " + read_fix(
            path, e, "Save it as UTF-8 text with a header row.")) from None


def _fast(path: str, width: int) -> np.ndarray | None:
    """The whole numeric table (after the header) by NumPy's C parser, or None when it refuses it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data": the slow path says so
            data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2, comments=None,
                              quotechar='"', encoding="utf-8-sig")
    except (ValueError, UnicodeDecodeError):
        return None
    return data if data.shape[1] == width and len(data) else None


def _slow(path: str, rows: list[list[str]], header: list[str], feats: list[int], lab: int):
    x = np.empty((len(rows) - 1, len(feats)), np.float32)
    labels = []
    for r, row in enumerate(rows[1:]):
        line = r + 2  # the header is line 1
        if len(row) != len(header):
            raise DataError(f"-d/--dataset {path}: line {line} has {len(row)} cells but the header has "
                            f"{len(header)} columns. Give every row the same columns.")
        for j, i in enumerate(feats):
            try:
                x[r, j] = float(row[i])
            except ValueError:
                raise DataError(f"-d/--dataset {path}: line {line}, column {header[i]!r} holds {row[i]!r}, not a "
                                f"number. Features must be numeric (encode text columns as numbers), and the "
                                f"label column must be named one of {', '.join(LABEL_NAMES)} or be the "
                                f"last.") from None
        labels.append(row[lab].strip())
    y, names = _text_labels(labels)
    return x, y, names


def read_csv(path: str) -> DatasetFile:
    """A CSV as a DatasetFile (one float32 feature matrix, one label vector)."""
    header = [h.strip() for h in _rows(path, header_only=True)[0]]
    if not header:
        raise DataError(f"-d/--dataset {path}: the CSV file is empty; it needs a header row and one row per "
                        f"sample.")
    if len(header) < 2:
        raise DataError(f"-d/--dataset {path}: the CSV header has {len(header)} column ({header}); it needs "
                        f"feature columns and a label column, separated by commas.")
    lab = _label_column(header)
    feats = [i for i in range(len(header)) if i != lab]
    data = _fast(path, len(header))
    if data is not None:
        x, y, names = data[:, feats].astype(np.float32), _numeric_labels(data[:, lab]), None
    else:
        rows = _rows(path)
        if len(rows) < 2:
            raise DataError(f"-d/--dataset {path}: the CSV file has only a header row; it needs a header row and "
                            f"one row per sample.")
        x, y, names = _slow(path, rows, header, feats, lab)
    classes = len(names) if names else (int(y.max()) + 1 if y.dtype.kind == "i" else None)
    return DatasetFile(path, f"CSV, label column {header[lab]!r}", [x], [y], classes=classes, class_names=names)
