"""Model builders shared by the strategy and search benchmarks (any Keras-like module `k`: ours or tf.keras).

Each builder returns (model, x, y, loss) for `steps` batches of `batch` samples of synthetic data.
"""

from __future__ import annotations

import numpy as np


def mnist_mlp(k, batch, steps, seed=0):
    rng = np.random.default_rng(seed)
    m = k.Sequential([k.Input(shape=(784,)), k.layers.Dense(512, activation="relu"),
                      k.layers.Dense(512, activation="relu"), k.layers.Dense(10, activation="softmax")])
    n = batch * steps
    return m, rng.random((n, 784), dtype=np.float32), rng.integers(0, 10, n), "sparse_categorical_crossentropy"


def mnist_cnn(k, batch, steps, seed=0):
    rng = np.random.default_rng(seed)
    L = k.layers
    m = k.Sequential([k.Input(shape=(28, 28, 1)), L.Conv2D(32, 3, activation="relu"),
                      L.Conv2D(64, 3, activation="relu"), L.MaxPooling2D(2), L.Flatten(),
                      L.Dense(128, activation="relu"), L.Dense(10, activation="softmax")])
    n = batch * steps
    return m, rng.random((n, 28, 28, 1), dtype=np.float32), rng.integers(0, 10, n), \
        "sparse_categorical_crossentropy"


def wide_mlp(k, batch, steps, seed=0, width=4096):
    rng = np.random.default_rng(seed)
    m = k.Sequential([k.Input(shape=(784,)), k.layers.Dense(width, activation="relu"),
                      k.layers.Dense(width, activation="relu"), k.layers.Dense(10, activation="softmax")])
    n = batch * steps
    return m, rng.random((n, 784), dtype=np.float32), rng.integers(0, 10, n), "sparse_categorical_crossentropy"


def dlrm(k, batch, steps, seed=0, tables=8, rows=100_000, dim=64, dense_features=13):
    """8 embedding tables of 100k x 64 (one id each) concatenated with a bottom MLP of the dense
    features, then a top MLP to one click probability."""
    rng = np.random.default_rng(seed)
    L = k.layers
    dense_in = k.Input(shape=(dense_features,), name="dense_features")
    ids = [k.Input(shape=(1,), dtype="int32", name=f"sparse_{i}") for i in range(tables)]
    bottom = L.Dense(dim, activation="relu", name="bottom")(dense_in)
    embs = [L.Flatten(name=f"flat_{i}")(L.Embedding(rows, dim, name=f"table_{i}")(t)) for i, t in enumerate(ids)]
    h = L.Concatenate(name="interact")([bottom] + embs)
    h = L.Dense(512, activation="relu", name="top_1")(h)
    h = L.Dense(256, activation="relu", name="top_2")(h)
    out = L.Dense(1, activation="sigmoid", name="click")(h)
    m = k.Model([dense_in] + ids, out)
    n = batch * steps
    x = [rng.random((n, dense_features), dtype=np.float32)] + [rng.integers(0, rows, (n, 1)).astype(np.int32)
                                                                for _ in range(tables)]
    return m, x, rng.integers(0, 2, (n, 1)).astype(np.float32), "binary_crossentropy"


MODELS = {"mnist_mlp": mnist_mlp, "mnist_cnn": mnist_cnn, "wide_mlp": wide_mlp, "dlrm": dlrm}
