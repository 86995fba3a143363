"""Dataset loaders reading Keras' file formats from the cache and from -d, compared with Keras' own
loaders on the same (small, hand-made) files; -d errors."""

import gzip
import io
import logging
import os
import pickle
import tarfile

import numpy as np
import pytest

from flexflow_keras import datasets
from flexflow_keras.datasets import _common
from flexflow_keras.errors import DataError


@pytest.fixture
def cache(monkeypatch, tmp_path):
    d = tmp_path / "cache"
    d.mkdir()
    monkeypatch.setattr(_common, "cache_dirs", lambda: [str(d)])
    monkeypatch.setattr("sys.argv", ["train.py"])
    return d


def _mnist_npz(path, n=7):
    rng = np.random.default_rng(0)
    np.savez(path, x_train=rng.integers(0, 255, (n, 28, 28), dtype=np.uint8), y_train=np.arange(n) % 10,
             x_test=np.zeros((3, 28, 28), np.uint8), y_test=np.arange(3))


def _sequences_npz(path, keys, n=40, seed=0):
    rng = np.random.default_rng(seed)
    seqs = np.empty(n, dtype=object)
    for i in range(n):
        seqs[i] = [int(v) for v in rng.integers(1, 60, rng.integers(3, 30))]
    labels = rng.integers(0, 4, n)
    if keys == "imdb":
        np.savez(path, x_train=seqs[:25], y_train=labels[:25], x_test=seqs[25:], y_test=labels[25:])
    else:
        np.savez(path, x=seqs, y=labels)


def test_mnist_from_cache_and_from_d(cache, monkeypatch, caplog, tmp_path):
    _mnist_npz(cache / "mnist.npz")
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        (x, y), (xt, yt) = datasets.mnist.load_data()
    assert x.shape == (7, 28, 28) and xt.shape == (3, 28, 28)
    assert "(Keras cache)" in caplog.text
    other = tmp_path / "data"
    other.mkdir()
    _mnist_npz(other / "mine.npz", n=5)
    monkeypatch.setattr("sys.argv", ["train.py", "-d", str(other / "mine.npz")])
    assert datasets.mnist.load_data()[0][0].shape == (5, 28, 28)  # an .npz with mnist's keys
    monkeypatch.setattr("sys.argv", ["train.py", "-d", str(other)])
    assert datasets.mnist.load_data()[0][0].shape == (5, 28, 28)  # a directory whose one dataset is mine.npz
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setattr("sys.argv", ["train.py", "-d", str(empty)])
    with pytest.raises(DataError, match="empty directory.*mnist needs"):  # -d wins over the cache
        datasets.mnist.load_data()
    monkeypatch.setattr("sys.argv", ["train.py", "-d", str(tmp_path / "nope.npz")])
    with pytest.raises(DataError, match="nope.npz.*does not exist"):
        datasets.mnist.load_data()
    bad = other / "mnist.npz"
    bad.write_bytes(b"garbage")
    monkeypatch.setattr("sys.argv", ["train.py", "-d", str(bad)])
    with pytest.raises(DataError, match="mnist.npz: cannot read it as an .npz"):
        datasets.mnist.load_data()


def test_fashion_mnist_idx_files(cache):
    d = cache / "fashion-mnist"
    d.mkdir()
    imgs = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    for prefix, n in (("train", 2), ("t10k", 2)):
        with gzip.open(d / f"{prefix}-labels-idx1-ubyte.gz", "wb") as f:
            f.write(b"\0" * 8 + bytes([3, 7][:n]))
        with gzip.open(d / f"{prefix}-images-idx3-ubyte.gz", "wb") as f:
            f.write(b"\0" * 16 + imgs.tobytes())
    (x, y), (xt, yt) = datasets.fashion_mnist.load_data()
    np.testing.assert_array_equal(x, imgs)
    np.testing.assert_array_equal(y, [3, 7])


def _cifar_pickle(data, labels, key="labels"):
    return pickle.dumps({b"data": data, key.encode(): labels}, protocol=2)


@pytest.mark.parametrize("layout", ["dir", "tar"])
def test_cifar10_batches(cache, layout):
    rng = np.random.default_rng(1)
    blobs = {f"data_batch_{i}": (rng.integers(0, 255, (2, 3072), dtype=np.uint8), [i, i + 1]) for i in range(1, 6)}
    blobs["test_batch"] = (rng.integers(0, 255, (3, 3072), dtype=np.uint8), [9, 8, 7])
    if layout == "dir":
        d = cache / "cifar-10-batches-py"
        d.mkdir()
        for name, (data, labels) in blobs.items():
            (d / name).write_bytes(_cifar_pickle(data, labels))
    else:
        with tarfile.open(cache / "cifar-10-python.tar.gz", "w:gz") as tar:
            for name, (data, labels) in blobs.items():
                raw = _cifar_pickle(data, labels)
                info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
                info.size = len(raw)
                tar.addfile(info, io.BytesIO(raw))
    (x, y), (xt, yt) = datasets.cifar10.load_data()
    assert x.shape == (10, 32, 32, 3) and y.shape == (10, 1) and y.dtype == np.uint8
    np.testing.assert_array_equal(x[0], blobs["data_batch_1"][0][0].reshape(3, 32, 32).transpose(1, 2, 0))
    np.testing.assert_array_equal(yt[:, 0], [9, 8, 7])


def test_cifar_refuses_code_in_pickles(cache):
    d = cache / "cifar-10-batches-py"
    d.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (d / name).write_bytes(pickle.dumps(os.system, protocol=2))
    with pytest.raises(DataError, match="refusing to load"):
        datasets.cifar10.load_data()


def test_cifar100_labels(cache):
    d = cache / "cifar-100-python"
    d.mkdir()
    for name, n in (("train", 4), ("test", 2)):
        blob = pickle.dumps({b"data": np.zeros((n, 3072), np.uint8), b"fine_labels": list(range(n)),
                             b"coarse_labels": [0] * n}, protocol=2)
        (d / name).write_bytes(blob)
    (x, y), _ = datasets.cifar100.load_data()
    np.testing.assert_array_equal(y[:, 0], [0, 1, 2, 3])
    assert datasets.cifar100.load_data("coarse")[0][1].max() == 0


@pytest.mark.tf
@pytest.mark.parametrize("kwargs", [{}, {"num_words": 30, "skip_top": 2}, {"maxlen": 20, "seed": 5},
                                    {"oov_char": None, "num_words": 25, "index_from": 0, "start_char": None}])
def test_imdb_matches_keras_on_the_same_file(cache, monkeypatch, kwargs):
    pytest.importorskip("tensorflow")
    kimdb = pytest.importorskip("keras.src.datasets.imdb")
    path = cache / "imdb.npz"
    _sequences_npz(path, "imdb")
    monkeypatch.setattr(kimdb, "get_file", lambda *a, **k: str(path))
    (x, y), (xt, yt) = datasets.imdb.load_data(**kwargs)
    (kx, ky), (kxt, kyt) = kimdb.load_data(**kwargs)
    assert [list(s) for s in x] == [list(s) for s in kx] and [list(s) for s in xt] == [list(s) for s in kxt]
    np.testing.assert_array_equal(y, ky)
    np.testing.assert_array_equal(yt, kyt)


@pytest.mark.tf
@pytest.mark.parametrize("kwargs", [{}, {"num_words": 40, "test_split": 0.3}, {"maxlen": 15, "seed": 1}])
def test_reuters_matches_keras_on_the_same_file(cache, monkeypatch, kwargs):
    pytest.importorskip("tensorflow")
    kreuters = pytest.importorskip("keras.src.datasets.reuters")
    path = cache / "reuters.npz"
    _sequences_npz(path, "reuters", seed=2)
    monkeypatch.setattr(kreuters, "get_file", lambda *a, **k: str(path))
    (x, y), (xt, yt) = datasets.reuters.load_data(**kwargs)
    (kx, ky), (kxt, kyt) = kreuters.load_data(**kwargs)
    assert [list(s) for s in x] == [list(s) for s in kx] and [list(s) for s in xt] == [list(s) for s in kxt]
    np.testing.assert_array_equal(y, ky)


@pytest.mark.tf
def test_boston_matches_keras_on_the_same_file(cache, monkeypatch):
    pytest.importorskip("tensorflow")
    kboston = pytest.importorskip("keras.src.datasets.boston_housing")
    path = cache / "boston_housing.npz"
    rng = np.random.default_rng(3)
    np.savez(path, x=rng.standard_normal((30, 13)), y=rng.standard_normal(30))
    monkeypatch.setattr(kboston, "get_file", lambda *a, **k: str(path))
    for kw in ({}, {"test_split": 0.3, "seed": 4}):
        ours, theirs = datasets.boston_housing.load_data(**kw), kboston.load_data(**kw)
        for a, b in zip(np.concatenate([ours[0][0], ours[1][0]]), np.concatenate([theirs[0][0], theirs[1][0]]),
                        strict=True):
            np.testing.assert_array_equal(a, b)


def test_word_index_is_never_downloaded(cache):
    with pytest.raises(DataError, match="nothing is downloaded"):
        datasets.imdb.get_word_index()
    (cache / "reuters_word_index.json").write_text('{"the": 1}')
    assert datasets.reuters.get_word_index() == {"the": 1}


def test_d_npz_with_train_test_keys_serves_image_datasets(cache, monkeypatch, tmp_path, caplog):
    path = tmp_path / "my_images.npz"
    np.savez(path, x_train=np.zeros((4, 32, 32, 3), np.uint8), y_train=np.zeros((4, 1), np.uint8),
             x_test=np.zeros((2, 32, 32, 3), np.uint8), y_test=np.zeros((2, 1), np.uint8))
    monkeypatch.setattr("sys.argv", ["train.py", "-d", str(path)])
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        for loader in (datasets.cifar10, datasets.cifar100):
            (x, y), (xt, yt) = loader.load_data()
            assert x.shape == (4, 32, 32, 3) and xt.shape == (2, 32, 32, 3)
    assert "(from -d)" in caplog.text
    with pytest.raises(DataError, match=r"fashion_mnist.load_data\(\).*\(32, 32, 3\) are not \(28, 28\)"):
        datasets.fashion_mnist.load_data()  # the right keys, the wrong shape: not fashion_mnist's data
    other = tmp_path / "other.npz"
    np.savez(other, features=np.zeros(3))
    monkeypatch.setattr("sys.argv", ["train.py", "-d", str(other)])
    with pytest.raises(DataError, match="boston_housing.load_data.*an .npz with keys features"):
        datasets.boston_housing.load_data()
