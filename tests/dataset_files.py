"""Tiny dataset files in real formats (MNIST IDX, CIFAR python batches) for the -d tests; the test
folders import it as `dataset_files` (tests/ is on sys.path through its conftest.py)."""

import gzip
import pickle

import numpy as np

RNG = np.random.default_rng(0)


def write_idx(path, array, gz=False):
    codes = {np.dtype(np.uint8): 0x08, np.dtype(">f4"): 0x0D}
    header = bytes([0, 0, codes[array.dtype], array.ndim]) + np.asarray(array.shape, ">i4").tobytes()
    opener = gzip.open if gz else open
    with opener(path, "wb") as f:
        f.write(header + array.tobytes())


def mnist_idx_dir(d, gz=True, n=6, test=True):
    d.mkdir(parents=True, exist_ok=True)
    ext = ".gz" if gz else ""
    x = RNG.integers(0, 255, (n, 28, 28), dtype=np.uint8)
    y = (np.arange(n) % 10).astype(np.uint8)
    write_idx(d / f"train-images-idx3-ubyte{ext}", x, gz)
    write_idx(d / f"train-labels-idx1-ubyte{ext}", y, gz)
    if test:
        write_idx(d / f"t10k-images-idx3-ubyte{ext}", x[:2], gz)
        write_idx(d / f"t10k-labels-idx1-ubyte{ext}", y[:2], gz)
    return x, y


def cifar10_dir(d, skip=()):
    d.mkdir(parents=True)
    batches = {}
    for i, name in enumerate([f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]):
        data = RNG.integers(0, 255, (2, 3072), dtype=np.uint8)
        batches[name] = (data, [i % 10, (i + 1) % 10])
        if name not in skip:
            (d / name).write_bytes(pickle.dumps({b"data": data, b"labels": [i % 10, (i + 1) % 10]}, protocol=2))
    (d / "batches.meta").write_bytes(pickle.dumps({b"label_names": [f"c{i}".encode() for i in range(10)]},
                                                  protocol=2))
    return batches
