"""The dataset loaders with -d: -d always wins (any accepted format holding this dataset), and anything
else is a DataError saying what -d holds and what the loader needs; never the cache, never synthetic."""

import logging
import pickle

import numpy as np
import pytest
from dataset_files import cifar10_dir, mnist_idx_dir  # tests/dataset_files.py

from flexflow_keras import datasets
from flexflow_keras.datasets import _common
from flexflow_keras.errors import DataError


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """A Keras cache holding a real-looking mnist.npz, which -d must never fall back to."""
    d = tmp_path / "cache"
    d.mkdir()
    np.savez(d / "mnist.npz", x_train=np.zeros((9, 28, 28), np.uint8), y_train=np.zeros(9, np.uint8),
             x_test=np.zeros((1, 28, 28), np.uint8), y_test=np.zeros(1, np.uint8))
    monkeypatch.setattr(_common, "cache_dirs", lambda: [str(d)])
    return d


def use_d(monkeypatch, path):
    monkeypatch.setattr("sys.argv", ["train.py", "-d", str(path)])


def test_mnist_from_idx_dir_and_fashion_from_the_same(cache, monkeypatch, tmp_path, caplog):
    x, y = mnist_idx_dir(tmp_path / "digits", gz=True)
    use_d(monkeypatch, tmp_path / "digits")
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        (xt, yt), (xs, ys) = datasets.mnist.load_data()
    np.testing.assert_array_equal(xt, x)
    assert yt.dtype == np.uint8 and yt.shape == (6,) and xs.shape == (2, 28, 28)
    assert "MNIST IDX files" in caplog.text and "(from -d)" in caplog.text
    assert datasets.fashion_mnist.load_data()[0][0].shape == (6, 28, 28)


def test_empty_d_is_an_error_even_with_a_cached_file(cache, monkeypatch, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    use_d(monkeypatch, empty)
    for loader in (datasets.mnist, datasets.fashion_mnist, datasets.cifar10, datasets.cifar100,
                   datasets.boston_housing):
        with pytest.raises(DataError, match=f"{loader.__name__.split('.')[-1]}.load_data.*found an empty directory"):
            loader.load_data()


def test_xy_npz_without_test_split_is_cut_in_keras_ratio(cache, monkeypatch, tmp_path, caplog):
    p = tmp_path / "flat.npz"
    np.savez(p, x=np.arange(14 * 784).reshape(14, 784) % 255, y=np.arange(14) % 10)
    use_d(monkeypatch, p)
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        (x, y), (xt, yt) = datasets.mnist.load_data()
    assert x.shape == (12, 28, 28) and xt.shape == (2, 28, 28) and y.dtype == np.uint8
    assert "last 2 samples are the test set" in caplog.text


def test_image_loaders_reject_other_datasets(cache, monkeypatch, tmp_path):
    cifar10_dir(tmp_path / "cifar-10-batches-py")
    use_d(monkeypatch, tmp_path / "cifar-10-batches-py")
    with pytest.raises(DataError, match=r"mnist.load_data\(\): -d .* holds CIFAR-10 python batches .*\(32, 32, 3\) "
                                        r"are not \(28, 28\).*mnist needs 28x28"):
        datasets.mnist.load_data()
    (x, y), _ = datasets.cifar10.load_data()
    assert x.shape == (10, 32, 32, 3) and y.shape == (10, 1)
    with pytest.raises(DataError, match="has no coarse labels"):
        datasets.cifar100.load_data(label_mode="coarse")
    d = tmp_path / "cifar-100-python"
    d.mkdir()
    for name, n in (("train", 4), ("test", 2)):
        (d / name).write_bytes(pickle.dumps({b"data": np.zeros((n, 3072), np.uint8), b"fine_labels": [50] * n,
                                             b"coarse_labels": [3] * n}, protocol=2))
    use_d(monkeypatch, d)
    with pytest.raises(DataError, match="cifar10.load_data.*it has 100 classes, not 10"):
        datasets.cifar10.load_data()
    (_, y), _ = datasets.cifar100.load_data(label_mode="coarse")
    assert y.dtype == np.int64 and int(y.max()) == 3


def test_wrong_labels_for_the_loader(cache, monkeypatch, tmp_path):
    p = tmp_path / "d.npz"
    np.savez(p, x_train=np.zeros((3, 28, 28), np.uint8), y_train=np.array([0, 12, 3]),
             x_test=np.zeros((1, 28, 28), np.uint8), y_test=np.array([1]))
    use_d(monkeypatch, p)
    with pytest.raises(DataError, match="it has 13 classes, not 10"):
        datasets.mnist.load_data()


def test_boston_from_csv_and_rejects_other_widths(cache, monkeypatch, tmp_path):
    rows = ["," .join([f"f{i}" for i in range(13)] + ["price"])]
    rows += [",".join(str(i + j) for j in range(13)) + f",{20 + i}.5" for i in range(10)]
    p = tmp_path / "housing.csv"
    p.write_text("\n".join(rows) + "\n")
    use_d(monkeypatch, p)
    (x, y), (xt, yt) = datasets.boston_housing.load_data(test_split=0.2)
    assert x.shape == (8, 13) and xt.shape == (2, 13) and x.dtype == np.float64
    assert sorted(np.concatenate([y, yt])) == [20.5 + i for i in range(10)]
    q = tmp_path / "narrow.csv"
    q.write_text("a,b,price\n1,2,3\n4,5,6\n")
    use_d(monkeypatch, q)
    with pytest.raises(DataError, match=r"samples of shape \(2,\) are not \(13,\)"):
        datasets.boston_housing.load_data()


def test_sequence_loaders_need_their_npz(cache, monkeypatch, tmp_path):
    seqs = np.empty(5, dtype=object)
    for i in range(5):
        seqs[i] = list(range(1, 3 + i))
    d = tmp_path / "text"
    d.mkdir()
    np.savez(d / "reuters.npz", x=seqs, y=np.arange(5))
    use_d(monkeypatch, d)
    (x, y), (xt, yt) = datasets.reuters.load_data()
    assert len(x) + len(xt) == 5
    with pytest.raises(DataError, match=r"imdb.load_data\(\): -d .*holds a directory of 1 .npz file: reuters.npz; imdb "
                                        r"needs Keras' imdb.npz"):
        datasets.imdb.load_data()
    mnist_file = tmp_path / "mnist.npz"
    np.savez(mnist_file, x_train=np.zeros((2, 28, 28)), y_train=np.zeros(2))
    use_d(monkeypatch, mnist_file)
    with pytest.raises(DataError, match="reuters.load_data.*an .npz with keys x_train, y_train; reuters needs"):
        datasets.reuters.load_data()
