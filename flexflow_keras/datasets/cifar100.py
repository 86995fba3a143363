"""`keras.datasets.cifar100`: 32x32 colour images in 100 fine (20 coarse) classes, 50000 + 10000.

Reads Keras' ``cifar-100-python/`` (also under ``cifar-100-python-target/``) or
``cifar-100-python.tar.gz`` from the Keras cache, or -d when given (those, or any -d format holding
32x32x3 images with labels 0..99; anything else is an error); without them, deterministic learnable synthetic
images whose coarse label is ``fine // 5``.
"""

from __future__ import annotations

from flexflow_keras.datasets import _cifar, _flag
from flexflow_keras.datasets import _common as C

NAMES = ["cifar-100-python", "cifar-100-python-target", "cifar-100-python.tar.gz"]


def load_data(label_mode: str = "fine"):
    """Loads the CIFAR100 dataset.

    Args:
        label_mode: "fine" (100 classes) or "coarse" (20 superclasses).

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: uint8 images (50000|10000, 32, 32, 3) and labels (N, 1).
    """
    if label_mode not in ("fine", "coarse"):
        raise ValueError(f'`label_mode` must be one of `"fine"`, `"coarse"`. Received: label_mode={label_mode}.')
    found, why = C.locate("cifar100", NAMES)
    if found is not None and found.from_flag:
        return _flag.read_images(_flag.CIFAR100, found, "coarse" if label_mode == "coarse" else None)
    key = f"{label_mode}_labels"
    if found is not None:
        x_train, y_train = _cifar.read_batches("cifar100", found.path, "cifar-100-python", ["train"], key)
        x_test, y_test = _cifar.read_batches("cifar100", found.path, "cifar-100-python", ["test"], key)
        C.log_real("cifar100", found, f"{len(x_train)} train + {len(x_test)} test samples ({label_mode} labels)")
        return ((_cifar._channels(x_train), y_train.reshape(-1, 1)), (_cifar._channels(x_test), y_test.reshape(-1, 1)))
    C.log_synthetic("cifar100", why, f"50000 train + 10000 test 32x32x3 uint8 images, {label_mode} labels")
    (x_train, y_train), (x_test, y_test), _ = _cifar.synthetic(seed=4, classes=100)
    if label_mode == "coarse":
        y_train, y_test = y_train // 5, y_test // 5
    return ((_cifar._channels(x_train.transpose(0, 3, 1, 2)), y_train.astype("int64")),
            (_cifar._channels(x_test.transpose(0, 3, 1, 2)), y_test.astype("int64")))
