"""Data sources for fit/evaluate: in-memory arrays, a ``-d`` .npz file, or synthetic data shaped for the
model. Every source has ``x`` and ``y`` (lists of arrays, one per model input/output), an optional
``sample_weight``, ``num_samples``, and ``describe()``, the one line the log prints about where the data
came from. A ``-d`` file that is missing, unreadable or lacks the expected keys is a `DataError` naming
the path: never a silent fall back to synthetic data.
"""

from __future__ import annotations

import logging
import math
import os
import zipfile
from collections.abc import Sequence

import numpy as np

from flexflow_keras.errors import DataError

log = logging.getLogger("flexflow_keras")

LABEL_NOISE = 0.08  # the share of synthetic samples whose inputs show another class than their label


def _as_list(a) -> list[np.ndarray]:
    if a is None:
        return []
    if isinstance(a, (list, tuple)):
        return [np.asarray(v) for v in a]
    return [np.asarray(a)]


def _spec_text(arrays: Sequence[np.ndarray]) -> str:
    return ", ".join(f"{tuple(a.shape[1:])} {a.dtype}" for a in arrays)


class ArraySource:
    """Arrays in memory (one per model input and output).

    Args:
        x: an array or a list of arrays (several inputs).
        y: an array, a list of arrays (several outputs), or None (predict).
        sample_weight: per-sample weights or None.
        origin: how `describe` names the data.
    """

    def __init__(self, x, y=None, sample_weight=None, origin: str = "arrays passed to fit()"):
        self.x = _as_list(x)
        self.y = _as_list(y)
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight, np.float32).reshape(-1)
        self.origin = origin
        if not self.x:
            raise DataError(f"{origin}: no input arrays (x is empty).")
        named = [(f"x[{i}]" if len(self.x) > 1 else "x", a) for i, a in enumerate(self.x)]
        named += [(f"y[{i}]" if len(self.y) > 1 else "y", a) for i, a in enumerate(self.y)]
        if self.sample_weight is not None:
            named.append(("sample_weight", self.sample_weight))
        for name, a in named:
            if a.ndim == 0:
                raise DataError(f"{origin}: {name} is a scalar; every array needs a leading sample dimension.")
        counts = {name: int(a.shape[0]) for name, a in named}
        if len(set(counts.values())) > 1:
            raise DataError(f"{origin}: all arrays need the same number of samples, received "
                            + ", ".join(f"{k}: {v}" for k, v in counts.items())
                            + ". Make x and y (and sample_weight) the same length.")

    @property
    def num_samples(self) -> int:
        return int(self.x[0].shape[0])

    def describe(self) -> str:
        """One line: where the data came from and how many samples."""
        labels = f"; labels {_spec_text(self.y)}" if self.y else ""
        return f"{self.origin}: {self.num_samples} samples (inputs {_spec_text(self.x)}{labels})"

    def take(self, rows, origin: str | None = None) -> ArraySource:
        """A new source with the samples `rows` (an index array or slice)."""
        sw = None if self.sample_weight is None else self.sample_weight[rows]
        return ArraySource([a[rows] for a in self.x], [a[rows] for a in self.y] or None, sw,
                           origin or self.origin)


def validation_split(source: ArraySource, fraction: float) -> tuple[ArraySource, ArraySource]:
    """(train, validation): the last `fraction` of the samples, in order, as Keras' validation_split.

    Raises:
        ValueError: for a fraction outside (0, 1) or too few samples to split.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_split must be in (0, 1), received {fraction}.")
    n = source.num_samples
    split_at = int(math.floor(n * (1.0 - fraction)))
    if split_at in (0, n):
        raise ValueError(f"Training data contains {n} samples, which is not sufficient to split it into a "
                         f"validation and training set as specified by `validation_split={fraction}`. Either "
                         f"provide more data, or a different value for the `validation_split` argument.")
    return (source.take(slice(0, split_at), f"{source.origin} (training part)"),
            source.take(slice(split_at, n), f"{source.origin} (validation_split={fraction})"))


def _npz_group(keys: set[str], base: str) -> list[str] | None:
    """``base`` itself, or ``base_0, base_1, ...`` (several inputs/outputs)."""
    if base in keys:
        return [base]
    numbered, i = [], 0
    while f"{base}_{i}" in keys:
        numbered.append(f"{base}_{i}")
        i += 1
    return numbered or None


class NpzSource(ArraySource):
    """A ``.npz`` file (the ``-d`` flag) with Keras' ``x_train/y_train[/x_test/y_test]`` or ``x/y`` keys
    (``x_train_0, x_train_1, ...`` for several inputs).

    Args:
        path: the file.
        split: "train" (x_train/y_train, or x/y) or "test" (x_test/y_test).

    Raises:
        DataError: naming the path when it does not exist, cannot be read, or lacks the keys.
    """

    def __init__(self, path, split: str = "train"):
        self.path = os.fspath(path)
        if split not in ("train", "test"):
            raise ValueError(f"NpzSource split must be 'train' or 'test', received {split!r}.")
        if not os.path.exists(self.path):
            raise DataError(f"Dataset file {self.path!r} (from -d/--dataset) does not exist. Check the path, or "
                            f"drop -d to train on synthetic data.")
        if os.path.isdir(self.path):
            raise DataError(f"Dataset path {self.path!r} (from -d/--dataset) is a directory; -d needs an .npz "
                            f"file with x_train/y_train (or x/y) arrays.")
        try:
            with open(self.path, "rb") as fh:
                magic = fh.read(4)
        except OSError as e:
            raise DataError(f"Cannot read dataset file {self.path!r} (from -d/--dataset): {e}.") from None
        if magic != b"PK\x03\x04":
            raise DataError(f"Cannot read dataset file {self.path!r} (from -d/--dataset): it is not an .npz (zip) "
                            f"file. Write one with np.savez(path, x_train=..., y_train=...).")
        try:
            with np.load(self.path, allow_pickle=False) as f:
                keys = set(f.files)
                xk, yk = self._keys(keys, split)
                x = [f[k] for k in xk]
                y = [f[k] for k in yk]
                self.has_test = _npz_group(keys, "x_test") is not None and _npz_group(keys, "y_test") is not None
        except DataError:
            raise
        except ValueError as e:
            if "Object arrays" in str(e) or "allow_pickle" in str(e):
                raise DataError(f"Dataset file {self.path!r} holds object (ragged) arrays, which are not loaded "
                                f"for safety. Pad sequences to one length (utils.pad_sequences) and save plain "
                                f"arrays with np.savez.") from None
            raise DataError(f"Cannot read dataset file {self.path!r} as .npz: {e}") from None
        except (OSError, zipfile.BadZipFile, EOFError) as e:
            raise DataError(f"Cannot read dataset file {self.path!r} (from -d/--dataset): {e}. It must be an .npz "
                            f"written by np.savez with x_train/y_train (or x/y) arrays.") from None
        self.split = split
        self.keys = xk + yk
        super().__init__(x, y, origin=f"dataset {self.path} ({', '.join(self.keys)})")

    def _keys(self, keys: set[str], split: str) -> tuple[list[str], list[str]]:
        if split == "test":
            xk, yk = _npz_group(keys, "x_test"), _npz_group(keys, "y_test")
        else:
            xk, yk = _npz_group(keys, "x_train"), _npz_group(keys, "y_train")
            if xk is None and yk is None:
                xk, yk = _npz_group(keys, "x"), _npz_group(keys, "y")
        if xk is None or yk is None:
            want = "x_test/y_test" if split == "test" else "x_train/y_train (or x/y)"
            raise DataError(f"Dataset file {self.path!r} has keys {sorted(keys)} but needs {want}. Save it with "
                            f"np.savez(path, x_train=..., y_train=..., x_test=..., y_test=...).")
        return xk, yk

    def test_source(self) -> NpzSource | None:
        """The file's x_test/y_test as a source, or None when it has none."""
        return NpzSource(self.path, "test") if self.has_test else None

    def describe(self) -> str:
        return f"{self.origin}: {self.num_samples} {self.split} samples (inputs {_spec_text(self.x)}; labels " \
               f"{_spec_text(self.y)})"


def _label_kind(loss) -> str | None:
    return getattr(loss, "label_kind", None) if loss is not None else None


class SyntheticSource(ArraySource):
    """Deterministic, learnable data shaped for a model: a hidden class per sample decides every input
    (a class template plus noise; integer inputs draw class-specific ids) and every label, except that
    a share `LABEL_NOISE` of the samples show another class than their label (so a model cannot score
    100%, and training on synthetic data by mistake does not look like success).

    Labels follow each output's loss: class ids for sparse crossentropy, one-hot for categorical
    crossentropy, {0, 1} codes for binary crossentropy, class-dependent floats for regression losses.

    Args:
        input_specs: TensorSpecs (or shapes) of the model inputs; the batch dim is ignored.
        output_specs: TensorSpecs (or shapes) of the model outputs.
        n: number of samples.
        loss: a loss object, or one per output (None: regression-style float labels).
        seed: the generator seed.
        int_ranges: per input, the exclusive upper bound of integer ids (e.g. an Embedding's input_dim);
            default 2.
    """

    def __init__(self, input_specs, output_specs, n: int, loss=None, seed: int = 0, int_ranges=None):
        if n <= 0:
            raise ValueError(f"SyntheticSource needs n > 0 samples, received n={n}.")
        ins = [_spec(s) for s in input_specs]
        outs = [_spec(s) for s in output_specs]
        losses = list(loss) if isinstance(loss, (list, tuple)) else [loss] * len(outs)
        if len(losses) != len(outs):
            raise ValueError(f"SyntheticSource got {len(losses)} losses for {len(outs)} outputs.")
        rng = np.random.default_rng(seed)
        classes = [shape[-1] if shape and shape[-1] > 1 else 2 for shape, _ in outs]
        kinds = [_label_kind(lo) for lo in losses]
        k_count = max([c for c, kd in zip(classes, kinds, strict=True) if kd in ("sparse", "categorical")] or [10])
        hidden = rng.integers(0, k_count, n)
        # a share of the samples show another class than their label: learnable, never perfect
        shown = hidden.copy()
        wrong = np.flatnonzero(rng.random(n) < LABEL_NOISE)
        shown[wrong] = (shown[wrong] + rng.integers(1, max(k_count, 2), len(wrong))) % k_count
        ranges = list(int_ranges) if int_ranges is not None else [None] * len(ins)
        x = [self._input(rng, shown, k_count, shape, dtype, ranges[i]) for i, (shape, dtype) in enumerate(ins)]
        y = [self._label(rng, hidden, k_count, shape, kind, c)
             for (shape, _), kind, c in zip(outs, kinds, classes, strict=True)]
        self.seed = seed
        super().__init__(x, y, origin="synthetic data")

    @staticmethod
    def _input(rng, hidden, k_count, shape, dtype, high):
        n = len(hidden)
        if np.dtype(dtype).kind in "iu":
            high = int(high or 2)
            codes = rng.integers(0, high, (k_count,) + shape)
            ids = codes[hidden]
            flip = rng.random(ids.shape) < 0.1  # 10% of ids are noise
            ids[flip] = rng.integers(0, high, int(flip.sum()))
            return ids.astype(dtype)
        templates = rng.standard_normal((k_count,) + shape, dtype=np.float32)
        noise = rng.standard_normal((n,) + shape, dtype=np.float32)
        noise *= 0.5
        noise += templates[hidden]
        return noise.astype(dtype, copy=False)

    @staticmethod
    def _label(rng, hidden, k_count, shape, kind, classes):
        n = len(hidden)
        if kind == "sparse":
            ids = hidden % classes
            if len(shape) > 1:  # per-position ids, e.g. (T,) for an output (T, C)
                ids = np.broadcast_to(ids.reshape((n,) + (1,) * (len(shape) - 1)), (n,) + shape[:-1])
            return np.ascontiguousarray(ids, dtype=np.int32)
        if kind == "categorical":
            ids = hidden % classes
            onehot = np.eye(classes, dtype=np.float32)[ids]
            return np.ascontiguousarray(np.broadcast_to(onehot.reshape((n,) + (1,) * (len(shape) - 1) + (classes,)),
                                                        (n,) + shape))
        if kind == "binary":
            codes = rng.integers(0, 2, (k_count,) + shape).astype(np.float32)
            return codes[hidden]
        values = rng.standard_normal((k_count,) + shape, dtype=np.float32)
        return values[hidden] + 0.1 * rng.standard_normal((n,) + shape, dtype=np.float32)

    def describe(self) -> str:
        return (f"synthetic data (no data passed and no -d): {self.num_samples} samples shaped for the model "
                f"(inputs {_spec_text(self.x)}; labels {_spec_text(self.y)}), learnable class templates plus "
                f"noise, seed {self.seed}")


def _spec(s) -> tuple[tuple[int, ...], str]:
    shape = getattr(s, "shape", s)
    dtype = getattr(s, "dtype", "float32")
    shape = tuple(shape)
    if shape and shape[0] is None:
        shape = shape[1:]
    if any(d is None for d in shape):
        raise ValueError(f"SyntheticSource needs fully known sample shapes, received {tuple(getattr(s, 'shape', s))}.")
    return tuple(int(d) for d in shape), str(np.dtype(dtype))
