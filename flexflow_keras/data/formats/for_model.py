"""A ``-d`` dataset shaped for a model (`flag_source`), as fit() and evaluate() without data use it.

Inputs are matched to the model's input shapes the way Keras users reshape by hand, only when the
values per sample agree: a flat (784,) row feeds (28, 28, 1) and back, size-1 axes are added or dropped,
and channels-last images feed a channels-first input (and back) by a transpose. Integer class labels
become one-hot rows for a categorical-crossentropy output. Values are not rescaled (uint8 pixels reach the
model as 0..255 floats, as arrays passed to fit() do). Anything else is a `DataError` naming the model's
input shape and the data's shape.
"""

from __future__ import annotations

import logging

import numpy as np

from flexflow_keras.data.formats.base import DatasetFile
from flexflow_keras.data.formats.detect import check_exists, open_dataset
from flexflow_keras.data.sources import ArraySource
from flexflow_keras.errors import DataError

log = logging.getLogger("flexflow_keras")


def _shape(spec) -> tuple[int, ...]:
    shape = tuple(getattr(spec, "shape", spec))
    return tuple(shape[1:]) if shape and shape[0] is None else shape


def conform_input(a: np.ndarray, want: tuple, where: str, name: str) -> tuple[np.ndarray, str]:
    """(`a` with per-sample shape `want`, a note on what was done or ""); DataError when impossible."""
    got = tuple(a.shape[1:])
    if len(got) == len(want) and all(w is None or w == g for w, g in zip(want, got, strict=True)):
        return a, ""
    n = len(a)
    if None not in want and int(np.prod(got)) == int(np.prod(want)):
        squeeze = tuple(d for d in got if d != 1) == tuple(d for d in want if d != 1)
        if squeeze or len(got) == 1 or len(want) == 1:
            return a.reshape((n,) + want), f"reshaped {got} to {want}"
        if len(got) == 3 and want == (got[2], got[0], got[1]):
            return np.ascontiguousarray(a.transpose(0, 3, 1, 2)), f"channels-last {got} to channels-first {want}"
        if len(got) == 3 and want == (got[1], got[2], got[0]):
            return np.ascontiguousarray(a.transpose(0, 2, 3, 1)), f"channels-first {got} to channels-last {want}"
    raise DataError(f"{where}: its inputs have shape {got} per sample ({int(np.prod(got))} values) but the model's "
                    f"input '{name}' expects {want}. Point -d at data of shape {want}, or build the model with "
                    f"keras.Input(shape={got}).")


def conform_label(y: np.ndarray, out_shape: tuple, loss, where: str) -> tuple[np.ndarray, str]:
    """Integer class ids as one-hot rows for a categorical loss; (N, 1) ids as (N,) for a 1-D output."""
    kind = getattr(loss, "label_kind", None)
    ids = y.reshape(len(y)) if y.ndim == 2 and y.shape[1] == 1 else y
    if kind == "categorical" and ids.ndim == 1 and ids.dtype.kind in "iu" and len(out_shape) == 1:
        classes = int(out_shape[0])
        if len(ids) and (int(ids.max()) >= classes or int(ids.min()) < 0):
            raise DataError(f"{where}: its labels run from {int(ids.min())} to {int(ids.max())} but the model's "
                            f"output has {classes} classes. Give the last Dense layer {int(ids.max()) + 1} units.")
        return np.eye(classes, dtype=np.float32)[ids], f"labels one-hot to {classes} classes"
    return y, ""


def flag_source(path: str, input_specs, output_specs, losses, split: str = "train", input_names=None):
    """The -d dataset at `path` as a source for a model with these inputs and outputs.

    Args:
        path: the -d path.
        input_specs, output_specs: the model's TensorSpecs (batch dim first).
        losses: the loss object per output (None where none).
        split: "train" (fit) or "test" (evaluate; the training arrays when the file has no test split).
        input_names: the model's input names, for messages.

    Returns:
        An `ArraySource` whose ``describe()`` is the log line. A folder of images is not an array format:
        fit() hands it to the loaders (models/training_feeds.folder_dataset), and here it is a DataError.

    Raises:
        DataError: the path is unusable, or its arrays do not fit the model.
    """
    full = check_exists(path)
    return shape_for_model(open_dataset(full), input_specs, output_specs, losses, split, input_names)


def shape_for_model(ds: DatasetFile, input_specs, output_specs, losses, split: str = "train",
                    input_names=None) -> ArraySource:
    """A DatasetFile's `split` conformed to the model (see the module docstring)."""
    test = split == "test" and ds.has_test
    xs, ys = (ds.x_test, ds.y_test) if test else (ds.x_train, ds.y_train)
    where = f"-d/--dataset {ds.path} ({ds.format})"
    names = list(input_names or [f"input_{i}" for i in range(len(input_specs))])
    if len(xs) != len(input_specs) or len(ys) != len(output_specs):
        raise DataError(f"{where} holds {len(xs)} input and {len(ys)} label arrays but the model has "
                        f"{len(input_specs)} inputs and {len(output_specs)} outputs. Save one x array per input "
                        f"(x_train_0, x_train_1, ...) and one y per output.")
    losses = list(losses) if losses is not None else [None] * len(ys)
    notes = []
    cx = []
    for a, spec, name in zip(xs, input_specs, names, strict=True):
        a, note = conform_input(a, _shape(spec), where, name)
        cx.append(a)
        notes += [note] if note else []
    cy = []
    for y, spec, loss in zip(ys, output_specs, losses, strict=True):
        y, note = conform_label(y, _shape(spec), loss, where)
        cy.append(y)
        notes += [note] if note else []
    line = ds.summary("test" if test else "train")
    if split == "test" and not test:
        line += " (the file has no test split: evaluating on its training samples)"
    if notes:
        line += "; " + ", ".join(notes)
    return DatasetSource(ds, cx, cy, line)


class DatasetSource(ArraySource):
    """A -d dataset's arrays, shaped for the model; ``dataset`` is the `DatasetFile`."""

    def __init__(self, dataset: DatasetFile, x, y, line: str):
        super().__init__(x, y, origin=f"-d {dataset.path} ({dataset.format})")
        self.dataset = dataset
        self._line = line

    def describe(self) -> str:
        return self._line
