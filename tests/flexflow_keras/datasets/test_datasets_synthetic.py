"""Dataset loaders without files: real shapes, dtypes and counts, determinism, learnability, the log line."""

import logging

import numpy as np
import pytest

from flexflow_keras import datasets
from flexflow_keras.datasets import _common


@pytest.fixture(autouse=True)
def _no_files(monkeypatch, tmp_path):
    monkeypatch.setattr(_common, "cache_dirs", lambda: [str(tmp_path / "empty_cache")])
    monkeypatch.setattr("sys.argv", ["train.py"])


def _centroid_acc(x, y, classes, n_train):
    """Accuracy of a nearest-class-mean classifier fitted on the first n_train samples."""
    a = x.reshape(len(x), -1).astype(np.float32)
    means = np.stack([a[:n_train][y[:n_train] == c].mean(0) for c in range(classes)])
    d = (a[n_train:, None, :] - means[None]) ** 2
    return float(np.mean(d.sum(-1).argmin(1) == y[n_train:]))


def test_mnist_shapes_learnable_logged(caplog):
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        (x, y), (xt, yt) = datasets.mnist.load_data()
    assert (x.shape, x.dtype, y.shape, y.dtype) == ((60000, 28, 28), np.uint8, (60000,), np.uint8)
    assert (xt.shape, yt.shape) == ((10000, 28, 28), (10000,))
    assert set(np.unique(y)) == set(range(10))
    assert "mnist.load_data(): using deterministic synthetic data (no mnist.npz" in caplog.text
    assert _centroid_acc(x[:3000] / 255.0, y[:3000], 10, 2000) > 0.9
    (x2, _), _ = datasets.mnist.load_data()
    np.testing.assert_array_equal(x2, x)


def test_fashion_mnist_and_cifar_shapes():
    (x, y), (xt, yt) = datasets.fashion_mnist.load_data()
    assert x.shape == (60000, 28, 28) and yt.shape == (10000,) and x.dtype == np.uint8
    (x, y), (xt, yt) = datasets.cifar10.load_data()
    assert (x.shape, x.dtype, y.shape, y.dtype) == ((50000, 32, 32, 3), np.uint8, (50000, 1), np.uint8)
    assert xt.shape == (10000, 32, 32, 3) and yt.shape == (10000, 1)
    assert _centroid_acc(x[:3000] / 255.0, y[:3000, 0], 10, 2000) > 0.8
    (x, y), (xt, yt) = datasets.cifar100.load_data(label_mode="coarse")
    assert y.shape == (50000, 1) and y.max() == 19 and y.dtype == np.int64
    with pytest.raises(ValueError, match="label_mode"):
        datasets.cifar100.load_data(label_mode="medium")


def test_imdb_keras_processing_on_synthetic_corpus():
    (x, y), (xt, yt) = datasets.imdb.load_data(num_words=5000, maxlen=400)
    assert x.dtype == object and isinstance(x[0], list) and y.dtype == np.int64
    assert 15000 < len(x) < 25000 and set(np.unique(y)) == {0, 1}
    assert all(s[0] == 1 and len(s) < 400 for s in x[:200])
    assert max(max(s) for s in x[:500]) < 5000
    (full, _), _ = datasets.imdb.load_data()
    assert len(full) == 25000
    # a bag-of-words nearest-centroid classifier learns the labels
    bow = np.zeros((4000, 5000), np.float32)
    for i, s in enumerate(x[:4000]):
        bow[i, s] = 1.0
    direction = bow[:3000][y[:3000] == 1].mean(0) - bow[:3000][y[:3000] == 0].mean(0)
    score = bow @ direction
    cut = (score[:3000][y[:3000] == 1].mean() + score[:3000][y[:3000] == 0].mean()) / 2
    assert np.mean((score[3000:] > cut) == (y[3000:4000] == 1)) > 0.8
    with pytest.raises(TypeError, match="unexpected keyword"):
        datasets.imdb.load_data(nb_words=10)


def test_reuters_and_boston():
    (x, y), (xt, yt) = datasets.reuters.load_data(num_words=10000, test_split=0.2)
    assert len(x) == 8982 and len(xt) == 2246 and y.max() <= 45
    assert np.bincount(y).argmax() in (3, 4)
    assert len(datasets.reuters.get_label_names()) == 46
    (x, y), (xt, yt) = datasets.boston_housing.load_data()
    assert (x.shape, y.shape, xt.shape, x.dtype) == ((404, 13), (404,), (102, 13), np.float64)
    a = np.c_[x, np.ones(len(x))]
    w, *_ = np.linalg.lstsq(a, y, rcond=None)
    pred = np.c_[xt, np.ones(len(xt))] @ w
    assert 1 - np.mean((pred - yt) ** 2) / np.var(yt) > 0.6
    with pytest.raises(ValueError, match="test_split"):
        datasets.boston_housing.load_data(test_split=1.0)
