"""A CSV file for ``-d``: a header row, numeric feature columns and one label column, named label, labels,
y, target or class (any case), else the last column. Integer labels are class ids; text labels become
ids in sorted order (their names kept); other numbers are regression targets. A non-numeric feature cell
is an error naming its line and column.
"""

from __future__ import annotations

import csv

import numpy as np

from flexflow_keras.data.formats.base import DatasetFile
from flexflow_keras.errors import DataError

LABEL_NAMES = ("label", "labels", "y", "target", "class")


def _label_column(header: list[str]) -> int:
    lowered = [h.strip().lower() for h in header]
    for name in LABEL_NAMES:
        if name in lowered:
            return lowered.index(name)
    return len(header) - 1


def _labels(path: str, cells: list[str], column: str):
    """(labels, class names or None)."""
    try:
        values = np.array([float(c) for c in cells])
    except ValueError:
        names = sorted(set(cells))
        index = {n: i for i, n in enumerate(names)}
        return np.array([index[c] for c in cells], np.int64), names
    if np.all(np.isfinite(values)) and np.all(values == np.round(values)) and values.min() >= 0:
        return values.astype(np.int64), None
    return values.astype(np.float32), None


def read_csv(path: str) -> DatasetFile:
    """A CSV as a DatasetFile (one float32 feature matrix, one label vector)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise DataError(f"-d/--dataset {path}: cannot read the CSV file: {e}. Save it as UTF-8 text with a "
                        f"header row.") from None
    rows = [r for r in rows if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise DataError(f"-d/--dataset {path}: the CSV file has {'no rows' if not rows else 'only a header row'}; "
                        f"it needs a header row and one row per sample.")
    header = [h.strip() for h in rows[0]]
    if len(header) < 2:
        raise DataError(f"-d/--dataset {path}: the CSV header has {len(header)} column ({header}); it needs "
                        f"feature columns and a label column, separated by commas.")
    lab = _label_column(header)
    feats = [i for i in range(len(header)) if i != lab]
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
    y, names = _labels(path, labels, header[lab])
    classes = len(names) if names else (int(y.max()) + 1 if y.dtype.kind == "i" else None)
    return DatasetFile(path, f"CSV, label column {header[lab]!r}", [x], [y], classes=classes, class_names=names)
