"""CSV files as datasets: `tf.data.experimental.make_csv_dataset` and `tf.data.experimental.CsvDataset`
(keras.io's structured-data examples read their train and test CSV files with the first), and
`tf.io.decode_csv` for lines read otherwise (TensorFlow's CSV tutorial maps it over a `TextLineDataset`).

Both read the whole of the files into one NumPy column per field when called (the files of these scripts
are small tables) and hand the columns to `SliceDataset.from_tensor_slices`, so shuffle, repeat, batch
and map behave as for in-memory data. Parsing follows TensorFlow 2.21: a column's dtype comes from its
entry in `column_defaults` / `record_defaults` (``[0]`` int32, ``[0.0]`` float32, ``["NA"]`` string, a
dtype such as ``tf.float32`` for a column that may not be empty) or, without them, is inferred from the
first `num_rows_for_inference` rows (int32, int64, float32, float64, then string); an empty field or
`na_value` takes the column's default; strings come back as bytes.
"""

from __future__ import annotations

import collections
import csv
import glob
import gzip
import io
import os

import numpy as np

from flexflow_keras.errors import DataError

_DTYPE_NAMES = ("float32", "float64", "int32", "int64", "string")
_TYPE_ORDER = ("int32", "int64", "float32", "float64", "string")


def _paths(who: str, file_pattern) -> list[str]:
    if isinstance(file_pattern, np.ndarray):  # a string tensor: a file name element of list_files (interleave)
        file_pattern = file_pattern.item() if file_pattern.ndim == 0 else file_pattern.reshape(-1).tolist()
    patterns = [file_pattern] if isinstance(file_pattern, (str, bytes, os.PathLike)) else list(file_pattern)
    paths = []
    for p in patterns:
        p = p.decode() if isinstance(p, bytes) else os.fspath(p)
        found = sorted(glob.glob(p)) if glob.has_magic(p) else [p]
        paths += found
    missing = [p for p in paths if not os.path.isfile(p)]
    if not paths or missing:
        raise DataError(f"{who}: no CSV file at {missing[0] if missing else file_pattern!r}; give the path of an "
                        f"existing file, a glob, or a list of paths.")
    return paths


def _open(path: str, compression_type, encoding: str):
    kind = (compression_type or "").upper()
    if kind not in ("", "GZIP"):
        raise DataError(f"CSV reader: compression_type={compression_type!r} is not supported; expected None, '' or "
                        f"'GZIP'.")
    if kind == "GZIP":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding=encoding, newline="")
    return open(path, encoding=encoding, newline="")


def _rows(who, paths, field_delim, use_quote_delim, header, compression_type, encoding):
    """(path, line number, fields) of every record of the files, each file's header skipped."""
    for path in paths:
        with _open(path, compression_type, encoding) as f:
            reader = csv.reader(f, delimiter=field_delim,
                                quoting=csv.QUOTE_MINIMAL if use_quote_delim else csv.QUOTE_NONE)
            for k, fields in enumerate(reader):
                if header and k == 0:
                    continue
                if fields:
                    yield path, k + 1, fields


def _header(who, paths, field_delim, use_quote_delim, compression_type, encoding) -> list[str]:
    names = None
    for path in paths:
        with _open(path, compression_type, encoding) as f:
            reader = csv.reader(f, delimiter=field_delim,
                                quoting=csv.QUOTE_MINIMAL if use_quote_delim else csv.QUOTE_NONE)
            first = next(reader, None)
        if first is None:
            raise DataError(f"{who}: {path!r} is empty; it has no header row to take the column names from.")
        if names is not None and first != names:
            raise DataError(f"{who}: the files' headers differ ({names} in the first, {first} in {path!r}); give "
                            f"column_names=[...] and files of the same columns.")
        names = first
    return names


def _infer_type(value: str, na_value: str, prev: str | None) -> str | None:
    """TensorFlow's rule: the least permissive type of int32, int64, float32, float64, string that still
    holds every value seen so far."""
    if value in ("", na_value):
        return prev
    start = _TYPE_ORDER.index(prev) if prev else 0
    for t in _TYPE_ORDER[start:]:
        try:
            if t == "int32" and np.int32(int(value)) == int(value):
                return t
            if t == "int64":
                np.int64(int(value))
                return t
            if t in ("float32", "float64") and np.dtype(t).type(value) < np.inf:
                return t
        except (ValueError, OverflowError):
            continue
        if t == "string":
            return t
    return "string"


def _default(who: str, entry, k: int):
    """(dtype, default or None when the column is required) of one `column_defaults` entry."""
    if isinstance(entry, str) and entry in _DTYPE_NAMES:  # tf.float32 & co are their names here
        return entry, None
    if isinstance(entry, type) and issubclass(entry, np.generic) or isinstance(entry, np.dtype):
        name = np.dtype(entry).name
        if name not in _DTYPE_NAMES:
            raise DataError(f"{who}: column_defaults[{k}] is dtype {name}; expected one of {_DTYPE_NAMES}.")
        return name, None
    if isinstance(entry, np.ndarray) and entry.dtype.kind in "iuf":  # tf.constant([0], tf.int64): its dtype
        if entry.dtype.name not in _DTYPE_NAMES:
            raise DataError(f"{who}: column_defaults[{k}] has dtype {entry.dtype.name}; expected one of "
                            f"{_DTYPE_NAMES}.")
        return entry.dtype.name, (entry.ravel()[0] if entry.size else None)
    values = list(np.ravel(np.asarray(entry, dtype=object)))
    if len(values) > 1:
        raise DataError(f"{who}: column_defaults[{k}] is {entry!r}; expected one default value (e.g. [0], [0.0], "
                        f"['NA']), an empty list, or a dtype.")
    if not values:
        return "float32", None
    v = values[0]
    if isinstance(v, (str, bytes)):
        return "string", v.encode() if isinstance(v, str) else v
    if isinstance(v, (bool, np.bool_)):
        raise DataError(f"{who}: column_defaults[{k}] is a bool; CSV columns are int32, int64, float32, float64 "
                        f"or string.")
    if isinstance(v, (int, np.integer)):
        return (np.asarray(v).dtype.name if isinstance(v, np.integer) else "int32"), v
    if isinstance(v, (float, np.floating)):
        return (np.asarray(v).dtype.name if isinstance(v, np.floating) else "float32"), v
    raise DataError(f"{who}: column_defaults[{k}] is {type(v).__name__} {v!r}; expected a number, a string or a "
                    f"dtype.")


def _parse(who, value, dtype, default, na_value, where):
    if value in ("", na_value):
        if default is None:
            raise DataError(f"{who}: {where} is empty, and the column has no default (its column_defaults entry "
                            f"is a dtype); give a default value such as [0.0] or ['NA'].")
        return default
    if dtype == "string":
        return value.encode()
    try:
        return np.dtype(dtype).type(value) if dtype.startswith("float") else np.dtype(dtype).type(int(value))
    except (ValueError, OverflowError):
        raise DataError(f"{who}: {where} holds {value!r}, which is not a {dtype} (its column_defaults entry); give "
                        f"a string default (['']) for that column, or fix the file.") from None


def read_columns(who, paths, names, defaults, select, field_delim, use_quote_delim, na_value, header,
                 compression_type, encoding, num_rows_for_inference=100):
    """The selected columns of the files as NumPy arrays (strings as object arrays of bytes)."""
    rows = list(_rows(who, paths, field_delim, use_quote_delim, header, compression_type, encoding))
    for path, line, fields in rows:
        if len(fields) != len(names):
            raise DataError(f"{who}: line {line} of {path!r} has {len(fields)} fields; expected {len(names)} "
                            f"(the columns {names}).")
    if defaults is None:
        types: list = [None] * len(select)
        for n, (_, _, fields) in enumerate(rows):
            if num_rows_for_inference is not None and n >= num_rows_for_inference:
                break
            types = [_infer_type(fields[c], na_value, t) for c, t in zip(select, types, strict=True)]
        specs = [(t or "string", b"" if (t or "string") == "string" else np.dtype(t).type(0)) for t in types]
    else:
        specs = [_default(who, d, k) for k, d in enumerate(defaults)]
    columns = []
    for (dtype, default), c in zip(specs, select, strict=True):
        values = [_parse(who, fields[c], dtype, default, na_value, f"line {line} of {path!r}, column "
                         f"'{names[c]}'") for path, line, fields in rows]
        columns.append(np.asarray(values, dtype=object if dtype == "string" else dtype))
    return columns


def _select(who, select_columns, names) -> list[int]:
    if select_columns is None:
        return list(range(len(names)))
    out = []
    for v in select_columns:
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            if not 0 <= v < len(names):
                raise DataError(f"{who}: select_columns holds {v}; expected indices in [0, {len(names)}).")
            out.append(int(v))
        elif v in names:
            out.append(names.index(v))
        else:
            raise DataError(f"{who}: select_columns holds {v!r}, which is not one of the columns {names}.")
    if len(set(out)) != len(out):
        raise DataError(f"{who}: select_columns {list(select_columns)} names a column twice.")
    return sorted(out)


def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None, label_name=None,
                     select_columns=None, field_delim=",", use_quote_delim=True, na_value="", header=True,
                     num_epochs=None, shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                     prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False, num_rows_for_inference=100,
                     compression_type=None, ignore_errors=False, encoding="utf-8"):
    """`tf.data.experimental.make_csv_dataset`: batches of ``(features, label)`` (features a dict of the
    columns by name, label the `label_name` column) or of features alone; repeated `num_epochs` times
    (None: forever, full batches only), shuffled unless ``shuffle=False``. See the module docstring."""
    from flexflow_keras.data.slices import SliceDataset

    who = "make_csv_dataset"
    paths = _paths(who, file_pattern)
    if column_names is None:
        if not header:
            raise DataError(f"{who}: expected column_names=[...] or header=True; received neither, so the columns "
                            f"have no names.")
        column_names = _header(who, paths, field_delim, use_quote_delim, compression_type, encoding)
    names = [str(n) for n in column_names]
    if len(set(names)) != len(names):
        raise DataError(f"{who}: column_names {names} holds a name twice; give each column its own name.")
    select = _select(who, select_columns, names)
    if column_defaults is not None and len(column_defaults) != len(select):
        raise DataError(f"{who}: column_defaults has {len(column_defaults)} entries; expected one per "
                        f"{'selected ' if select_columns is not None else ''}column ({len(select)}).")
    kept = [names[c] for c in select]
    if label_name is not None and label_name not in kept:
        raise DataError(f"{who}: label_name={label_name!r} is not one of the columns {kept}.")
    columns = read_columns(who, paths, names, column_defaults, select, field_delim, use_quote_delim, na_value,
                           header, compression_type, encoding, num_rows_for_inference)
    features = collections.OrderedDict(zip(kept, columns, strict=True))
    data = features if label_name is None else (features, features.pop(label_name))
    ds = SliceDataset.from_tensor_slices(data)
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    if num_epochs != 1:
        ds = ds.repeat(num_epochs)
    return ds.batch(int(batch_size), drop_remainder=num_epochs is None)


def csv_dataset(filenames, record_defaults, compression_type=None, buffer_size=None, header=False, field_delim=",",
                use_quote_delim=True, na_value="", select_cols=None, exclude_cols=None, name=None):
    """`tf.data.experimental.CsvDataset`: one tuple of scalars per record, a value per (selected) column,
    typed by `record_defaults` (one entry per selected column, as make_csv_dataset's column_defaults)."""
    from flexflow_keras.data.slices import SliceDataset

    who = "CsvDataset"
    if select_cols is not None and exclude_cols is not None:
        raise DataError(f"{who}: give select_cols or exclude_cols, not both.")
    paths = _paths(who, filenames)
    first = next(_rows(who, paths, field_delim, use_quote_delim, header, compression_type, "utf-8"), None)
    width = len(first[2]) if first is not None else len(record_defaults)
    names = [f"column {k}" for k in range(width)]
    select = list(range(width)) if select_cols is None else _select(who, list(select_cols), names)
    if exclude_cols is not None:
        select = [c for c in select if c not in set(int(e) for e in exclude_cols)]
    if len(record_defaults) != len(select):
        raise DataError(f"{who}: record_defaults has {len(record_defaults)} entries; expected one per selected "
                        f"column ({len(select)} of the file's {width}).")
    columns = read_columns(who, paths, names, list(record_defaults), select, field_delim, use_quote_delim, na_value,
                           header, compression_type, "utf-8")
    return SliceDataset.from_tensor_slices(tuple(columns))


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, na_value="", select_cols=None,
               name=None):
    """`tf.io.decode_csv`: each CSV line of `records` (one string, or an array of them of any shape) split
    into its fields, returned as one tensor per (selected) column, of the records' shape, typed by
    `record_defaults` as `CsvDataset` types them (``int()`` int32, ``float()`` float32, ``str()`` string);
    an empty field or `na_value` takes the column's default."""
    from flexflow_keras.data.dataset import as_tensor

    who = "tf.io.decode_csv"
    lines = np.asarray(records, dtype=object)
    flat = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in lines.reshape(-1).tolist()]
    specs = [_default(who, d, k) for k, d in enumerate(record_defaults)]
    select = list(range(len(specs))) if select_cols is None else [int(c) for c in select_cols]
    if len(select) != len(specs):
        raise DataError(f"{who}: record_defaults has {len(specs)} entries; expected one per selected column "
                        f"(select_cols={list(select_cols)}).")
    quoting = csv.QUOTE_MINIMAL if use_quote_delim else csv.QUOTE_NONE
    values: list[list] = [[] for _ in specs]
    for n, line in enumerate(flat):
        fields = next(csv.reader([line], delimiter=field_delim, quoting=quoting), [""])
        if select_cols is None and len(fields) != len(specs):
            raise DataError(f"{who}: record {n} ({line[:60]!r}) has {len(fields)} fields; expected "
                            f"{len(specs)}, one per entry of record_defaults.")
        if select and max(select) >= len(fields):
            raise DataError(f"{who}: record {n} ({line[:60]!r}) has {len(fields)} fields; select_cols asks for "
                            f"column {max(select)}.")
        for j, ((dtype, default), c) in enumerate(zip(specs, select, strict=True)):
            values[j].append(_parse(who, fields[c], dtype, default, na_value, f"record {n}, field {c}"))
    out = []
    for (dtype, _), column in zip(specs, values, strict=True):
        array = np.empty(len(column), dtype=object) if dtype == "string" else np.asarray(column, dtype=dtype)
        if dtype == "string":
            array[:] = column
        out.append(as_tensor(array.reshape(lines.shape)))
    return out


__all__ = ["csv_dataset", "decode_csv", "make_csv_dataset"]
