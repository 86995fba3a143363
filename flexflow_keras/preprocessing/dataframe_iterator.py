"""`ImageDataGenerator.flow_from_dataframe` (Keras 2): augmented batches of the image files a table
names, with labels from its columns.

The table is a pandas DataFrame or anything indexable by column name with equal-length columns (a dict
of lists); pandas itself is never imported. Keras 2's rules: `x_col` holds file names (joined to
`directory` when given); `class_mode` "categorical" (one-hot; a list of names per row is multi-hot),
"binary" (two classes), "sparse" (class ids) read `y_col` as class names, "raw" its values as they are
(several columns: one row of values each), "multi_output" one array per column, "input" the images
themselves, None no labels. Rows whose file is missing or not an image are dropped with a warning
(``validate_filenames``), and so are rows whose class is not in `classes`. `subset` splits the rows in
table order at the generator's `validation_split` (the first share is "validation"). `weight_col`
adds per-sample weights to every batch.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import numpy as np

from flexflow_keras.preprocessing import image_utils
from flexflow_keras.preprocessing.image_iterators import DirectoryIterator, Iterator

log = logging.getLogger("flexflow_keras")

CLASS_MODES = ("binary", "categorical", "input", "multi_output", "raw", "sparse", None)
_WHO = "flow_from_dataframe"


def _column(df, name: str) -> list:
    try:
        col = df[name]
    except (KeyError, IndexError, TypeError):
        cols = list(getattr(df, "columns", df.keys() if hasattr(df, "keys") else []))
        raise KeyError(f"{_WHO}: the dataframe has no column {name!r}; its columns: {cols}.") from None
    return list(col.tolist() if hasattr(col, "tolist") else col)


def _is_names(v) -> bool:
    return isinstance(v, (list, tuple)) and all(isinstance(s, str) for s in v)


class DataFrameIterator(DirectoryIterator):
    """Batches of the images a table names (see the module docstring for the rules).

    Args:
        dataframe: the table. directory: the folder the file names are relative to (None: as given).
        image_data_generator: the `ImageDataGenerator`.
        x_col: column of file names. y_col: column (or list of columns) of labels.
        weight_col: column of sample weights, or None.
        target_size, color_mode, classes, class_mode, batch_size, shuffle, seed, data_format,
            save_to_dir, save_prefix, save_format, subset, interpolation, keep_aspect_ratio, dtype: as
            `DirectoryIterator` (class_mode adds "raw" and "multi_output").
        validate_filenames: drop rows whose file is missing or not an image (with a warning).
    """

    def __init__(self, dataframe, directory, image_data_generator, x_col="filename", y_col="class",
                 weight_col=None, target_size=(256, 256), color_mode="rgb", classes=None,
                 class_mode="categorical", batch_size=32, shuffle=True, seed=None, data_format="channels_last",
                 save_to_dir=None, save_prefix="", save_format="png", subset=None, interpolation="nearest",
                 keep_aspect_ratio=False, validate_filenames=True, dtype="float32"):
        from flexflow_keras.data.images import COLOR_MODES, IMAGE_EXTENSIONS, ImageFolderSource

        if class_mode not in CLASS_MODES:
            raise ValueError(f"{_WHO} expects class_mode in {CLASS_MODES}, received class_mode={class_mode!r}.")
        if color_mode not in COLOR_MODES:
            raise ValueError(f"{_WHO} expects color_mode in {sorted(COLOR_MODES)}, received color_mode={color_mode!r}.")
        names = [str(f) for f in _column(dataframe, x_col)]
        n = len(names)
        y_cols = list(y_col) if isinstance(y_col, (list, tuple)) else [y_col]
        if class_mode == "multi_output" and not isinstance(y_col, (list, tuple)):
            raise TypeError(f"{_WHO}(class_mode='multi_output') expects y_col to be a list of columns, received "
                            f"y_col={y_col!r}.")
        raw = [_column(dataframe, c) for c in y_cols] if class_mode is not None and class_mode != "input" else []
        weights = _column(dataframe, weight_col) if weight_col is not None else None
        keep = np.ones(n, bool)
        paths = [os.path.join(directory, f) if directory is not None else f for f in names]
        if validate_filenames:
            ok = np.array([p.lower().endswith(IMAGE_EXTENSIONS) and os.path.isfile(p) for p in paths], bool)
            if (~ok).any():
                log.warning('%s: found %d invalid image filename(s) in x_col="%s" (missing, or not one of %s); '
                            'these rows are ignored.', _WHO, int((~ok).sum()), x_col, ", ".join(IMAGE_EXTENSIONS))
            keep &= ok
        self.class_indices: dict = {}
        if class_mode in ("binary", "categorical", "sparse"):
            labels = raw[0] if len(raw) == 1 else None
            if labels is None:
                raise TypeError(f"{_WHO}(class_mode={class_mode!r}) expects one y_col of class names, received "
                                f"y_col={y_col!r}.")
            bad = [v for v in labels if not (isinstance(v, str) or (class_mode == "categorical" and _is_names(v)))]
            if bad:
                kinds = "strings, or lists of strings" if class_mode == "categorical" else "strings"
                raise TypeError(f"{_WHO}(class_mode={class_mode!r}): the values of y_col={y_col!r} must be {kinds} "
                                f"(class names), received {type(bad[0]).__name__} {bad[0]!r}. Use class_mode='raw' "
                                f"for numeric targets, or convert the column with .astype(str).")
            found = sorted({c for v in labels for c in ([v] if isinstance(v, str) else v)})
            classes = list(classes) if classes is not None else found
            wanted = set(classes)
            keep &= np.array([(v in wanted) if isinstance(v, str) else all(c in wanted for c in v) for v in labels])
            if class_mode == "binary" and len(classes) != 2:
                raise ValueError(f"{_WHO}(class_mode='binary') needs exactly 2 classes, found {len(classes)}: "
                                 f"{classes[:10]}. Use class_mode='categorical' or 'sparse' for more.")
            self.class_indices = {c: i for i, c in enumerate(classes)}
        rows = np.flatnonzero(keep)
        if subset is not None:
            rows = self._split(rows, subset, image_data_generator._validation_split)
        self.filenames = [names[i] for i in rows]
        self.filepaths = [paths[i] for i in rows]
        self._targets = self._targets_of(class_mode, raw, rows, dtype)
        self.classes = self._targets if class_mode in ("binary", "sparse") else (
            [[self.class_indices[c] for c in ([v] if isinstance(v, str) else v)] for v in
             (raw[0][i] for i in rows)] if class_mode == "categorical" else None)
        if class_mode == "categorical" and all(len(c) == 1 for c in self.classes):
            self.classes = np.array([c[0] for c in self.classes], np.int32)
        self.sample_weights = None if weights is None else np.asarray([weights[i] for i in rows], dtype)
        self.num_classes = len(self.class_indices)
        self.class_mode, self.dtype = class_mode, dtype
        self.data_format = image_utils.check_data_format(_WHO, data_format)
        self.source = ImageFolderSource(self.filepaths, None, None, tuple(target_size), COLOR_MODES[color_mode],
                                        interpolation, bool(keep_aspect_ratio), origin="dataframe",
                                        resizer="pillow")  # load_img's
        self.image_shape = self.source.sample_shape
        if self.data_format == "channels_first":
            self.image_shape = (self.image_shape[2],) + self.image_shape[:2]
        self.image_data_generator = image_data_generator
        self.save_to_dir, self.save_prefix, self.save_format = save_to_dir, save_prefix, save_format
        self.samples = len(rows)
        if self.class_indices:
            log.info("%s: found %d validated image filenames belonging to %d classes.", _WHO, self.samples,
                     self.num_classes)
        else:
            log.info("%s: found %d validated image filenames.", _WHO, self.samples)
        Iterator.__init__(self, self.samples, batch_size, shuffle, seed)

    @staticmethod
    def _split(rows: np.ndarray, subset: str, split) -> np.ndarray:
        if subset not in ("training", "validation"):
            raise ValueError(f"{_WHO} expects subset 'training' or 'validation', received {subset!r}.")
        if not split:
            raise ValueError(f"{_WHO}(subset=...) needs ImageDataGenerator(validation_split=...).")
        cut = int(len(rows) * split)
        return rows[:cut] if subset == "validation" else rows[cut:]

    def _targets_of(self, class_mode, raw: Sequence[list], rows: np.ndarray, dtype):
        if class_mode in ("binary", "sparse"):
            return np.asarray([self.class_indices[raw[0][i]] for i in rows], dtype)
        if class_mode == "categorical":
            out = np.zeros((len(rows), len(self.class_indices)), dtype)
            for k, i in enumerate(rows):
                v = raw[0][i]
                for c in ([v] if isinstance(v, str) else v):
                    out[k, self.class_indices[c]] = 1
            return out
        if class_mode == "raw":
            cols = [np.asarray([col[i] for i in rows]) for col in raw]
            return cols[0] if len(cols) == 1 else np.stack(cols, axis=1)
        if class_mode == "multi_output":
            return [np.asarray([col[i] for i in rows]) for col in raw]
        return None

    def _get_batches_of_transformed_samples(self, rows, rng):
        batch_x = self._transformed_images(rows, rng)
        mode = self.class_mode
        if mode is None:
            return batch_x
        if mode == "input":
            batch_y = batch_x.copy()
        elif mode == "multi_output":
            batch_y = [t[rows] for t in self._targets]
        else:
            batch_y = self._targets[rows]
        if self.sample_weights is not None:
            return batch_x, batch_y, self.sample_weights[rows]
        return batch_x, batch_y
