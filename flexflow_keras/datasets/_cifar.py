"""CIFAR readers shared by cifar10 and cifar100: Keras' extracted directories of pickled batches, or the
original .tar.gz read in place, and learnable synthetic 32x32x3 images."""

from __future__ import annotations

import os
import pickle
import tarfile

import numpy as np

from flexflow_keras.datasets import _common as C


def _channels(x: np.ndarray) -> np.ndarray:
    """(N, 3, 32, 32) as stored, transposed to channels_last unless the backend says otherwise."""
    from flexflow_keras import backend

    if backend.image_data_format() == "channels_last":
        return x.transpose(0, 2, 3, 1)
    return x


def read_batches(dataset: str, path: str, inner: str, members: list[str], label_key: str):
    """Concatenated (data, labels) of pickled batch files from a directory or a .tar.gz.

    Args:
        dataset: loader name, for errors.
        path: a directory (holding `inner`/ or the files) or a tar.gz archive.
        inner: the folder inside the archive/directory ("cifar-10-batches-py").
        members: batch file names.
        label_key: "labels", "fine_labels" or "coarse_labels".
    """
    blobs = []
    try:
        if os.path.isdir(path):
            base = os.path.join(path, inner) if os.path.isdir(os.path.join(path, inner)) else path
            for m in members:
                with open(os.path.join(base, m), "rb") as f:
                    blobs.append(f.read())
        else:
            with tarfile.open(path, "r:gz") as tar:
                for m in members:
                    f = tar.extractfile(f"{inner}/{m}")
                    if f is None:
                        raise OSError(f"{inner}/{m} is not a file in the archive")
                    blobs.append(f.read())
        xs, ys = [], []
        for blob in blobs:
            d = C.load_pickle(blob)
            d = {k.decode("utf8") if isinstance(k, bytes) else k: v for k, v in d.items()}
            xs.append(np.asarray(d["data"], np.uint8).reshape(-1, 3, 32, 32))
            ys.append(np.asarray(d[label_key]))
    except (OSError, KeyError, ValueError, EOFError, tarfile.TarError, pickle.UnpicklingError) as e:
        raise C.read_error(dataset, path, e) from None
    return np.concatenate(xs), np.concatenate(ys)


def synthetic(seed: int, classes: int, train: int = 50000, test: int = 10000):
    """Learnable uint8 (N, 32, 32, 3) images (class templates plus noise) and uint8 labels (N, 1)."""
    rng = np.random.default_rng(seed)
    templates = C.class_templates(rng, classes, (32, 32, 3), cell=4)
    y = rng.integers(0, classes, train + test).astype(np.uint8)
    x = C.noisy_images(rng, templates, y)
    return (x[:train], y[:train, None]), (x[train:], y[train:, None]), y
