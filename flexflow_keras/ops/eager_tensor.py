"""`EagerTensor`: what an eager call returns (a layer or model called on arrays, a `keras.ops` function,
an activation, a loss): a NumPy array with tf.keras' tensor convenience ``.numpy()``, so tutorial lines
such as ``loss_fn(y, model(x)).numpy()`` and ``tf.nn.softmax(logits).numpy()`` run. A view, never a copy;
NumPy functions take it as the array it is."""

from __future__ import annotations

import numpy as np

from flexflow_keras.utils import tree


class EagerTensor(np.ndarray):
    """A NumPy array with tf.keras' tensor conveniences: ``.numpy()`` returns a plain ndarray copy."""

    def numpy(self) -> np.ndarray:
        """The value as a plain NumPy array (0-d for a scalar, as a TensorFlow scalar's numpy() is one)."""
        return np.array(self, copy=True).view(np.ndarray)


def eager(value):
    """`value` (an ndarray or a NumPy scalar) viewed as an `EagerTensor`; anything else as it is."""
    if type(value) is np.ndarray:
        return value.view(EagerTensor)
    if isinstance(value, np.generic):
        return np.asarray(value).view(EagerTensor)
    return value


def as_eager(outputs):
    """`outputs` (a structure of arrays) with every ndarray viewed as an `EagerTensor`."""
    return tree.map_structure(lambda a: a.view(EagerTensor) if type(a) is np.ndarray else a, outputs)
