"""`keras.datasets.fashion_mnist`: 28x28 grayscale clothing images, 60000 train + 10000 test.

Reads Keras' ``fashion-mnist/`` directory of gzipped IDX files (train-labels-idx1-ubyte.gz,
train-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz) from -d or the Keras
cache, or -d when given (those files, or any -d format holding 28x28 images with labels 0..9; anything
else is an error); without it, deterministic learnable synthetic images of the same shapes and dtypes.
"""

from __future__ import annotations

import gzip
import os

import numpy as np

from flexflow_keras.datasets import _common as C
from flexflow_keras.datasets import _flag
from flexflow_keras.datasets.mnist import TEST, TRAIN, synthetic_digits

_FILES = ["train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
          "t10k-images-idx3-ubyte.gz"]


def _read_dir(path: str):
    def read(name, offset):
        with gzip.open(os.path.join(path, name), "rb") as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)

    try:
        y_train, y_test = read(_FILES[0], 8), read(_FILES[2], 8)
        x_train = read(_FILES[1], 16).reshape(len(y_train), 28, 28)
        x_test = read(_FILES[3], 16).reshape(len(y_test), 28, 28)
    except (OSError, ValueError, EOFError) as e:
        raise C.read_error("fashion_mnist", path, e) from None
    return (x_train, y_train), (x_test, y_test)


def load_data():
    """Loads the Fashion-MNIST dataset.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: uint8 arrays of shapes (60000, 28, 28), (60000,),
        (10000, 28, 28), (10000,).
    """
    found, why = C.locate("fashion_mnist", ["fashion-mnist"])
    if found is not None and found.from_flag:
        return _flag.read_images(_flag.FASHION_MNIST, found)
    if found is not None:
        data = _read_dir(found.path)
        C.log_real("fashion_mnist", found, f"{len(data[0][0])} train + {len(data[1][0])} test samples")
        return data
    C.log_synthetic("fashion_mnist", why, f"{TRAIN} train + {TEST} test 28x28 uint8 images, 10 classes")
    return synthetic_digits(seed=2)
