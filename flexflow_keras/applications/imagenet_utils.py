"""`keras.applications.imagenet_utils`: the ImageNet input preprocessing of the pretrained models
(`preprocess_input` in its three modes), `decode_predictions` (class names from the Keras cache's
`imagenet_class_index.json`), and the shape helpers the builders share (`obtain_input_shape`,
`correct_pad`), with Keras 3's numbers.
"""

from __future__ import annotations

import json

import numpy as np

from flexflow_keras import backend
from flexflow_keras.applications import _common
from flexflow_keras.layers.base import Layer
from flexflow_keras.ops.eager_tensor import EagerTensor
from flexflow_keras.utils.serialization import register_keras_serializable

CLASS_INDEX_ORIGIN = "https://storage.googleapis.com/download.tensorflow.org/data/imagenet_class_index.json"
_CAFFE_MEAN_BGR = (103.939, 116.779, 123.68)
_TORCH_MEAN = (0.485, 0.456, 0.406)
_TORCH_STD = (0.229, 0.224, 0.225)
_MODES = ("caffe", "tf", "torch")
_class_index: dict | None = None


def preprocess_input(x, data_format=None, mode="caffe"):
    """Preprocess a batch of images (or one image) as the ImageNet models were trained.

    Args:
        x: images with values in [0, 255], channels last (RGB): a NumPy array (floats are changed in place,
            as Keras does; integers are converted to float32 first) or a symbolic tensor inside a model.
        data_format: only "channels_last" (None: the configured one).
        mode: "caffe" (RGB to BGR, minus ImageNet's mean per channel), "tf" (scaled to [-1, 1]) or
            "torch" (scaled to [0, 1], then normalized by ImageNet's mean and standard deviation).

    Returns:
        The preprocessed images (same type as `x`).
    """
    if mode not in _MODES:
        raise ValueError(f"preprocess_input: expected mode to be one of 'caffe', 'tf' or 'torch'. Received: "
                         f"mode={mode!r}")
    data_format = data_format or backend.image_data_format()
    if data_format != "channels_last":
        raise ValueError(f"preprocess_input: flexflow_keras supports data_format='channels_last' only. Received: "
                         f"data_format={data_format!r}")
    if backend.is_keras_tensor(x):
        return _symbolic(x, mode)
    if _is_tensor(x):
        return _tensor(x, mode)  # a tensor, not a NumPy array (ours are ndarrays underneath)
    x = np.asarray(x) if not isinstance(x, np.ndarray) else x
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(backend.floatx())
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    if mode == "torch":
        x /= 255.0
        mean, std = _TORCH_MEAN, _TORCH_STD
    else:
        x = x[..., ::-1]
        mean, std = _CAFFE_MEAN_BGR, None
    for c in range(3):
        x[..., c] -= mean[c]
        if std is not None:
            x[..., c] /= std[c]
    return x


def _is_tensor(x) -> bool:
    """Whether Keras would take `x` as a tensor (left untouched), not a NumPy array (changed in place): an
    eager tensor, a tf.data element (a Dataset's batch, `data.dataset.Tensor`), or any other array-like that
    is not an ndarray (a tf.Variable)."""
    from flexflow_keras.data.dataset import Tensor as DatasetTensor

    return isinstance(x, EagerTensor | DatasetTensor) or (hasattr(x, "__array__") and not isinstance(x, np.ndarray))


def _tensor(x, mode: str):
    """Keras' tensor path (an eager tensor, a layer's output): a new tensor of x's dtype, x untouched. On
    integer pixels (a Resizing layer's uint8 output) 'caffe' adds the mean cast to that dtype, wrapping
    as TensorFlow's cast and add do (-103.939 is 153 in uint8); 'tf' and 'torch' divide, which
    TensorFlow refuses on integers."""
    from flexflow_keras.ops.eager_tensor import eager

    a = np.asarray(x)
    if a.dtype.kind in "iub":
        if mode != "caffe":
            raise TypeError(f"preprocess_input(mode={mode!r}) divides the pixels, which a tensor of dtype "
                            f"{a.dtype} cannot hold (tf.keras raises TypeError: `x` and `y` must have the same "
                            f"dtype); cast it first, e.g. preprocess_input(ops.cast(x, 'float32')).")
        mean = np.trunc(-np.asarray(_CAFFE_MEAN_BGR)).astype(np.int64).astype(a.dtype)
        return eager(a[..., ::-1] + mean)
    if mode == "tf":
        return eager((a / a.dtype.type(127.5) - a.dtype.type(1.0)).astype(a.dtype))
    if mode == "torch":
        return eager(((a / a.dtype.type(255.0) - np.asarray(_TORCH_MEAN, a.dtype)) /
                      np.asarray(_TORCH_STD, a.dtype)).astype(a.dtype))
    return eager((a[..., ::-1] + (-np.asarray(_CAFFE_MEAN_BGR)).astype(a.dtype)).astype(a.dtype))


def _symbolic(x, mode: str):
    if mode == "tf":  # two element-wise ops, saved in a .keras file as Keras saves them
        return x / 127.5 - 1.0
    return ImageNetPreprocessing(mode)(x)


@register_keras_serializable(package="flexflow_keras")
class ImageNetPreprocessing(Layer):
    """`preprocess_input`'s 'caffe' or 'torch' mode inside a model, as one layer without weights (so a
    model that preprocesses its input saves to a .keras file)."""

    def __init__(self, mode: str = "caffe", **kwargs):
        super().__init__(**kwargs)
        if mode not in ("caffe", "torch"):
            raise ValueError(f"ImageNetPreprocessing: mode must be 'caffe' or 'torch'. Received: mode={mode!r}")
        self.mode = mode

    def call(self, inputs):
        from flexflow_keras import ops

        if self.mode == "torch":
            return (inputs / 255.0 - np.asarray(_TORCH_MEAN, np.float32)) / np.asarray(_TORCH_STD, np.float32)
        return ops.take(inputs, np.array([2, 1, 0]), axis=-1) - np.asarray(_CAFFE_MEAN_BGR, np.float32)

    def get_config(self):
        return {**super().get_config(), "mode": self.mode}


def decode_predictions(preds, top: int = 5):
    """The `top` ImageNet classes of each prediction, as lists of (class_id, class_name, score), best first.

    The class names come from `imagenet_class_index.json` in the Keras cache (``~/.keras/models``), the file
    Keras downloads on its first call; flexflow_keras reads it there and never downloads it.
    """
    global _class_index
    preds = np.asarray(preds)
    if preds.ndim != 2 or preds.shape[1] != 1000:
        raise ValueError("decode_predictions expects a batch of ImageNet predictions (a 2D array of shape "
                         f"(samples, 1000)). Received array with shape: {preds.shape}")
    if _class_index is None:
        path = _common.cached_file("decode_predictions", "imagenet_class_index.json", CLASS_INDEX_ORIGIN,
                                   what="ImageNet class index")
        with open(path) as f:
            _class_index = json.load(f)
    results = []
    for pred in preds:
        best = pred.argsort()[-top:][::-1]
        result = [tuple(_class_index[str(i)]) + (pred[i],) for i in best]
        result.sort(key=lambda r: r[2], reverse=True)
        results.append(result)
    return results


def correct_pad(inputs, kernel_size):
    """The ((top, bottom), (left, right)) zero padding that makes a stride-2 'valid' convolution of
    `kernel_size` cover the input as TensorFlow's 'same' padding does."""
    size = tuple(inputs.shape[1:3])
    if isinstance(kernel_size, int):
        kernel_size = (kernel_size, kernel_size)
    adjust = (1, 1) if size[0] is None else (1 - size[0] % 2, 1 - size[1] % 2)
    correct = (kernel_size[0] // 2, kernel_size[1] // 2)
    return ((correct[0] - adjust[0], correct[0]), (correct[1] - adjust[1], correct[1]))


def obtain_input_shape(input_shape, default_size, min_size, data_format, require_flatten, weights=None):
    """Keras' input-shape check of the applications (channels_last): the shape to build the model with."""
    if data_format not in (None, "channels_last"):
        raise ValueError(f"obtain_input_shape: flexflow_keras supports data_format='channels_last' only. "
                         f"Received: data_format={data_format!r}")
    return _common.input_shape_for("obtain_input_shape", input_shape, default_size, min_size, require_flatten,
                                   weights)
