"""`keras.datasets.mnist`: 28x28 grayscale digits, 60000 train + 10000 test, uint8 images and labels.

Reads -d when given (Keras' mnist.npz, MNIST IDX files, or any -d format holding 28x28 images with
labels 0..9; anything else is an error), else ``mnist.npz`` from the Keras cache; without one, deterministic learnable synthetic digits of the same shapes and dtypes (see datasets/_common.py).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.datasets import _common as C
from flexflow_keras.datasets import _flag

TRAIN, TEST, CLASSES = 60000, 10000, 10


def synthetic_digits(seed: int, train: int = TRAIN, test: int = TEST):
    """Learnable 28x28 uint8 images: one blocky template per class plus noise; labels uint8 0..9."""
    rng = np.random.default_rng(seed)
    templates = C.class_templates(rng, CLASSES, (28, 28), cell=4)
    y = rng.integers(0, CLASSES, train + test).astype(np.uint8)
    x = C.noisy_images(rng, templates, y)
    return (x[:train], y[:train]), (x[train:], y[train:])


def load_data(path: str = "mnist.npz"):
    """Loads the MNIST dataset.

    Args:
        path: the file name looked up in -d and the Keras cache (default Keras' "mnist.npz").

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: uint8 arrays of shapes (60000, 28, 28), (60000,),
        (10000, 28, 28), (10000,).
    """
    found, why = C.locate("mnist", [path, "mnist.npz"])
    if found is not None and found.from_flag:
        return _flag.read_images(_flag.MNIST, found)
    if found is not None:
        data = C.load_train_test_npz("mnist", found.path)
        C.log_real("mnist", found, f"{len(data[0][0])} train + {len(data[1][0])} test samples")
        return data
    C.log_synthetic("mnist", why, f"{TRAIN} train + {TEST} test 28x28 uint8 digits-like images, 10 classes")
    return synthetic_digits(seed=1)
