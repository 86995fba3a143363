"""What a `Dataset.map` function's result becomes, as tf.data normalizes it (its structured_function):

- a list returned at the top is a tuple of components (tf.data reads it as a tuple, not as one tensor);
- a list inside the returned tuple, namedtuple or dict is one tensor, as `tf.convert_to_tensor` packs it:
  ``return image, (tf.one_hot(label, 10), [xmin, ymin, xmax, ymax])`` (the DeepLearning.AI object-localization
  lab) gives a float32 box of shape (4,), whose batches are (batch, 4) arrays with `.numpy()`;
- a Python number is a tensor of tf.convert_to_tensor's dtype (a float float32, an int int32).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.ops.dtype_rules import python_dtype


def normalize(result):
    """`result` of a map function as tf.data holds it (see the module docstring)."""
    if isinstance(result, list):
        result = tuple(result)
    return _pack(result)


def _pack(x):
    if isinstance(x, list):
        return _packed(x)
    if isinstance(x, tuple):
        parts = [_pack(v) for v in x]
        return type(x)(*parts) if hasattr(x, "_fields") else tuple(parts)
    if isinstance(x, dict):
        return type(x)((k, _pack(v)) for k, v in x.items())
    if isinstance(x, bool | int | float):  # a Python number: a tensor of tf.convert_to_tensor's dtype
        from flexflow_keras.data.dataset import as_tensor

        return as_tensor(np.asarray(x, dtype=python_dtype(x)))
    return x


def _packed(items: list):
    """One tensor of a list, of tf.convert_to_tensor's dtype (Python floats float32, ints int32; tensors and
    arrays stacked with their own dtype, which Python numbers among them take)."""
    from flexflow_keras.data.dataset import as_tensor

    dtype = python_dtype(items)
    arrays = [np.asarray(v) for v in items]
    if dtype is None:  # tensors among Python numbers: the numbers take the tensors' dtype, as in TensorFlow
        typed = [a.dtype for v, a in zip(items, arrays, strict=True) if not isinstance(v, bool | int | float)]
        dtype = np.result_type(*typed) if typed else None
    return as_tensor(np.asarray(arrays, dtype=dtype) if items else np.asarray(items, dtype=dtype or "float32"))
