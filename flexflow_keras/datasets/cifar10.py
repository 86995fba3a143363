"""`keras.datasets.cifar10`: 32x32 colour images in 10 classes, 50000 train + 10000 test.

Reads Keras' extracted ``cifar-10-batches-py/`` (also under ``cifar-10-batches-py-target/``) or the
``cifar-10-python.tar.gz`` archive in place, from the Keras cache, or -d when given (those, or any -d
format holding 32x32x3 images with labels 0..9; anything else is an error); without them, deterministic
learnable synthetic images. Images are uint8 (N, 32, 32, 3) (channels_first if the backend says so),
labels uint8 (N, 1), as Keras returns them.
"""

from __future__ import annotations

from flexflow_keras.datasets import _cifar, _flag
from flexflow_keras.datasets import _common as C

NAMES = ["cifar-10-batches-py", "cifar-10-batches-py-target", "cifar-10-python.tar.gz",
         "cifar-10-batches-py.tar.gz"]


def load_data():
    """Loads the CIFAR10 dataset.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: uint8 arrays of shapes (50000, 32, 32, 3), (50000, 1),
        (10000, 32, 32, 3), (10000, 1).
    """
    found, why = C.locate("cifar10", NAMES)
    if found is not None and found.from_flag:
        return _flag.read_images(_flag.CIFAR10, found)
    if found is not None:
        train = [f"data_batch_{i}" for i in range(1, 6)]
        x_train, y_train = _cifar.read_batches("cifar10", found.path, "cifar-10-batches-py", train, "labels")
        x_test, y_test = _cifar.read_batches("cifar10", found.path, "cifar-10-batches-py", ["test_batch"], "labels")
        C.log_real("cifar10", found, f"{len(x_train)} train + {len(x_test)} test samples")
        return ((_cifar._channels(x_train), y_train.astype("uint8").reshape(-1, 1)),
                (_cifar._channels(x_test), y_test.astype("uint8").reshape(-1, 1)))
    C.log_synthetic("cifar10", why, "50000 train + 10000 test 32x32x3 uint8 images, 10 classes")
    (x_train, y_train), (x_test, y_test), _ = _cifar.synthetic(seed=3, classes=10)
    return (_cifar._channels(x_train.transpose(0, 3, 1, 2)), y_train), \
        (_cifar._channels(x_test.transpose(0, 3, 1, 2)), y_test)
