"""The CIFAR-10/100 python batches for ``-d``: a directory like ``cifar-10-batches-py/`` (data_batch_1..5,
test_batch, batches.meta) or ``cifar-100-python/`` (train, test, meta), or the original ``.tar.gz`` read in
place. Pickles go through the restricted unpickler of datasets/_common.py (plain containers and NumPy
arrays only, never code). Images come out channels-last (N, 32, 32, 3) uint8.
"""

from __future__ import annotations

import os
import pickle
import tarfile
import zlib

import numpy as np

from flexflow_keras.data.formats.base import DatasetFile, read_fix
from flexflow_keras.errors import DataError

CIFAR10_TRAIN = [f"data_batch_{i}" for i in range(1, 6)]
CIFAR10_ALL = CIFAR10_TRAIN + ["test_batch"]
CIFAR100_ALL = ["train", "test"]


def cifar_kind(directory: str) -> str | None:
    """"cifar10" or "cifar100" when `directory` looks like (part of) that batch directory, else None."""
    try:
        names = {e.name for e in os.scandir(directory) if e.is_file()}  # train/ and test/ folders are not batches
    except OSError:
        return None
    if names & set(CIFAR10_ALL) or "batches.meta" in names:
        return "cifar10"
    base = os.path.basename(os.path.normpath(directory))
    if {"train", "test"} <= names or (base.startswith("cifar-100") and names & {"train", "test", "meta"}):
        return "cifar100"
    return None


def _decode(blob: bytes, where: str) -> dict:
    from flexflow_keras.datasets._common import load_pickle

    try:
        d = load_pickle(blob)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as e:
        raise DataError(f"-d/--dataset: cannot read the CIFAR batch {where}: {e}. Copy the original batch "
                        f"files again.") from None
    if not isinstance(d, dict):
        raise DataError(f"-d/--dataset: the CIFAR batch {where} is a pickled {type(d).__name__}, not the "
                        f"batch dictionary. Copy the original batch files again.")
    return {k.decode("utf8") if isinstance(k, bytes) else k: v for k, v in d.items()}


def _images(d: dict, where: str) -> np.ndarray:
    try:
        return np.asarray(d["data"], np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    except (KeyError, ValueError) as e:
        raise DataError(f"-d/--dataset: the CIFAR batch {where} has no 3072-value 'data' rows ({e}). Copy "
                        f"the original batch files again.") from None


def _labels(d: dict, key: str, where: str) -> np.ndarray:
    if key not in d:
        raise DataError(f"-d/--dataset: the CIFAR batch {where} has no {key!r} (keys: {sorted(d)}). Copy the "
                        f"original batch files again.")
    return np.asarray(d[key], np.int64)


def _names(meta: dict | None, key: str) -> list[str] | None:
    if not meta or key not in meta:
        return None
    return [n.decode("utf8") if isinstance(n, bytes) else str(n) for n in meta[key]]


def _build(origin: str, kind: str, blobs: dict[str, bytes], meta: bytes | None) -> DatasetFile:
    meta_d = _decode(meta, "meta") if meta else None
    if kind == "cifar10":
        parts = {n: _decode(blobs[n], n) for n in CIFAR10_ALL}
        x = np.concatenate([_images(parts[n], n) for n in CIFAR10_TRAIN])
        y = np.concatenate([_labels(parts[n], "labels", n) for n in CIFAR10_TRAIN]).astype(np.uint8)
        xt, yt = _images(parts["test_batch"], "test_batch"), _labels(parts["test_batch"], "labels", "test_batch")
        return DatasetFile(origin, "CIFAR-10 python batches", [x], [y.reshape(-1, 1)], [xt],
                           [yt.astype(np.uint8).reshape(-1, 1)], classes=10,
                           class_names=_names(meta_d, "label_names"))
    tr, te = _decode(blobs["train"], "train"), _decode(blobs["test"], "test")
    coarse = (_labels(tr, "coarse_labels", "train").reshape(-1, 1), _labels(te, "coarse_labels", "test").reshape(-1, 1))
    return DatasetFile(origin, "CIFAR-100 python batches", [_images(tr, "train")],
                       [_labels(tr, "fine_labels", "train").reshape(-1, 1)], [_images(te, "test")],
                       [_labels(te, "fine_labels", "test").reshape(-1, 1)], classes=100,
                       class_names=_names(meta_d, "fine_label_names"), extra_labels={"coarse": coarse})


def read_cifar_dir(directory: str, origin: str | None = None) -> DatasetFile:
    """A CIFAR-10 or CIFAR-100 batch directory; DataError naming the missing batches."""
    origin = origin or directory
    kind = cifar_kind(directory)
    wanted = CIFAR10_ALL if kind == "cifar10" else CIFAR100_ALL
    missing = [n for n in wanted if not os.path.isfile(os.path.join(directory, n))]
    if missing:
        label = "CIFAR-10" if kind == "cifar10" else "CIFAR-100"
        raise DataError(f"-d/--dataset {origin}: {label} python batches are incomplete: missing "
                        f"{', '.join(missing)} in {directory}. Extract the whole archive again.")
    blobs = {}
    for n in wanted:
        with open(os.path.join(directory, n), "rb") as f:
            blobs[n] = f.read()
    meta_name = os.path.join(directory, "batches.meta" if kind == "cifar10" else "meta")
    meta = None
    if os.path.isfile(meta_name):
        with open(meta_name, "rb") as f:
            meta = f.read()
    return _build(origin, kind, blobs, meta)


def tar_kind(path: str) -> str | None:
    """"cifar10"/"cifar100" for a .tar.gz holding those batches, else None (never raises)."""
    try:
        with tarfile.open(path, "r:*") as tar:
            names = {os.path.basename(n) for n in tar.getnames()}
    except (OSError, tarfile.TarError, EOFError, zlib.error):
        return None
    if "data_batch_1" in names or "test_batch" in names:
        return "cifar10"
    if {"train", "test"} <= names:
        return "cifar100"
    return None


def read_cifar_tar(path: str) -> DatasetFile:
    """The original cifar-10-python.tar.gz / cifar-100-python.tar.gz, read in place."""
    kind = tar_kind(path)
    wanted = CIFAR10_ALL if kind == "cifar10" else CIFAR100_ALL
    blobs, meta = {}, None
    try:
        with tarfile.open(path, "r:*") as tar:
            for member in tar.getmembers():
                base = os.path.basename(member.name)
                if member.isfile() and (base in wanted or base in ("batches.meta", "meta")):
                    data = tar.extractfile(member).read()
                    if base in wanted:
                        blobs[base] = data
                    else:
                        meta = data
    except (OSError, tarfile.TarError, EOFError, zlib.error) as e:
        raise DataError(f"-d/--dataset {path}: cannot read the archive: {e}. "
                        + read_fix(path, e, "Copy it again.")) from None
    missing = [n for n in wanted if n not in blobs]
    if missing:
        raise DataError(f"-d/--dataset {path}: the archive lacks the CIFAR batches {', '.join(missing)}. Copy "
                        f"the original archive again.")
    return _build(path, kind, blobs, meta)
