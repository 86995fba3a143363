"""`Input` and `InputLayer`: the symbolic entry points of a model."""

from __future__ import annotations

import numpy as np

from flexflow_keras import backend
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.node import Node
from flexflow_keras.ops.graph import STRING_DTYPES, KerasTensor


def _check_shape(who: str, shape) -> tuple[int | None, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise ValueError(f"{who} expects a shape tuple such as (784,) or (28, 28, 1), received "
                         f"{shape!r}.") from None
    for s in shape:
        if s is not None and (isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0):
            raise ValueError(f"{who} expects non-negative integer dims (or None), received shape={shape}.")
    return tuple(None if s is None else int(s) for s in shape)


class InputLayer(Layer):
    """The layer behind `Input`: holds the model's symbolic input tensor (`output`).

    Args:
        shape: per-sample shape (without the batch dim).
        batch_size: fixed batch size: shapes show it (``x.shape[0] == 16``) while the graph keeps the batch
            open, so fit and predict take other batch sizes as Keras 3 on TensorFlow does (ops/graph.py).
        dtype: the input's dtype (``backend.floatx()`` by default; ``"int32"`` for token ids).
        batch_shape: full shape including the batch dim, instead of `shape`.
        name: the layer's and the tensor's name.
    """

    def __init__(self, shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None,
                 input_tensor=None, optional=False, name=None, **kwargs):
        if "input_shape" in kwargs:
            shape = kwargs.pop("input_shape")
        if "batch_input_shape" in kwargs:
            batch_shape = kwargs.pop("batch_input_shape")
        if sparse:
            raise ValueError("InputLayer: sparse inputs are not supported; pass dense arrays.")
        super().__init__(name=name, **kwargs)
        if input_tensor is not None:
            if not isinstance(input_tensor, KerasTensor):
                raise ValueError(f"InputLayer '{self.name}' expects input_tensor to be a KerasTensor, "
                                 f"received {type(input_tensor).__name__}.")
            batch_shape, dtype = input_tensor.shape, input_tensor.dtype
        elif shape is not None and batch_shape is not None:
            raise ValueError(f"InputLayer '{self.name}': pass shape= or batch_shape=, not both.")
        elif batch_shape is not None:
            batch_shape = _check_shape(f"InputLayer '{self.name}'", batch_shape)
        elif shape is not None:
            batch_shape = (batch_size,) + _check_shape(f"InputLayer '{self.name}'", shape)
        else:
            raise ValueError(f"InputLayer '{self.name}' needs a shape, e.g. Input(shape=(784,)).")
        if not batch_shape:
            raise ValueError(f"InputLayer '{self.name}' needs at least a batch dim; received an empty shape.")
        self._batch_shape = tuple(batch_shape)
        if dtype in STRING_DTYPES:  # text for TextVectorization / StringLookup (layers/host_prefix.py)
            self._dtype = "string"
        else:
            self._dtype = str(np.dtype(dtype)) if dtype is not None else backend.floatx()
        self.optional = optional
        # The graph keeps the batch dim unknown so any batch size (and data-parallel shards) fit.
        tensor = input_tensor if input_tensor is not None else KerasTensor(
            (None,) + self._batch_shape[1:], self._dtype, name=self.name)
        if input_tensor is None:
            tensor._static_batch = self._batch_shape[0]  # shown by .shape; stateful RNNs size their states by it
        self.built = True
        self._build_input_shape = self._batch_shape
        Node(self, (), {}, tensor)
        self._tensor = tensor

    @property
    def batch_shape(self) -> tuple[int | None, ...]:
        return self._batch_shape

    @property
    def dtype_policy(self):
        """The global policy (float32), as Keras 3's InputLayer: its `dtype` is the input's, not its policy's."""
        from flexflow_keras.mixed_precision import global_policy

        return global_policy()

    def call(self, inputs):
        return inputs

    def get_config(self) -> dict:
        return {"batch_shape": self._batch_shape, "dtype": self._dtype, "name": self.name,
                "optional": self.optional}


def Input(shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, name=None, tensor=None,
          optional=False, **kwargs) -> KerasTensor:  # noqa: N802 - Keras' spelling
    """A symbolic input tensor for building functional models.

    Args:
        shape: per-sample shape, e.g. ``(784,)`` or ``(28, 28, 1)``.
        batch_size: fixed batch size (optional).
        dtype: the input's dtype (``"int32"`` for token ids).
        batch_shape: full shape including the batch dim, instead of `shape`.
        name: the input's name (``input_layer``, ``input_layer_1``, ... by default).

    Example:
        >>> x = Input(shape=(784,))
        >>> y = Dense(10, activation="softmax")(x)
        >>> model = Model(x, y)
    """
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, sparse=sparse,
                       batch_shape=batch_shape, name=name, input_tensor=tensor, optional=optional, **kwargs)
    return layer._tensor
