"""`HostLayer`: the base of preprocessing layers that compute on the host with NumPy rather than as ops
of the graph (TextVectorization, StringLookup, IntegerLookup): their inputs are strings or arbitrary
integers, their work is dictionary lookups, and Keras 3 itself runs them outside the backend's graph.

Called on arrays, lists or strings they return arrays at once (numbers as `EagerTensor`s, strings as
arrays of bytes with `.numpy()`, as TensorFlow's `.numpy()` gives them). Called on a symbolic input
they record a host step in front of the graph (`layers/host_prefix.py`).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import DataError
from flexflow_keras.layers.base import Layer
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.tf_ragged import RaggedTensor


class HostLayer(Layer):
    """A layer whose `host_call(array) -> array` runs on NumPy (see the module docstring)."""

    def host_call(self, inputs):
        raise NotImplementedError(f"{type(self).__name__} must implement host_call() (a base-class hook)")

    def output_dtype(self) -> str:
        """The dtype of `host_call`'s result ("string" for token arrays)."""
        raise NotImplementedError(f"{type(self).__name__} must implement output_dtype() (a base-class hook)")

    def __call__(self, *args, **kwargs):
        if not args:
            args = (self._pop_first_call_arg(kwargs),)
        inputs = args[0]
        if isinstance(inputs, KerasTensor) or (isinstance(inputs, (list, tuple)) and inputs and all(
                isinstance(t, KerasTensor) for t in inputs)):  # a list: HashedCrossing's features
            from flexflow_keras.layers import host_prefix

            return host_prefix.record(self, inputs)
        self.built = True
        return wrap_host_result(self.host_call(inputs))

    def call(self, inputs):
        return self.host_call(inputs)


def wrap_host_result(out):
    """A host layer's NumPy result as the eager call returns it (data/dataset.py's `as_tensor`)."""
    from flexflow_keras.data.dataset import as_tensor

    return out if isinstance(out, RaggedTensor) else as_tensor(out)


def as_host_array(x, layer) -> np.ndarray:
    """`x` (an array, tensor, list, or a single string) as a NumPy array."""
    if isinstance(x, KerasTensor):
        raise DataError(f"{type(layer).__name__} '{layer.name}' needs values here, received a symbolic tensor.")
    if isinstance(x, (str, bytes)):
        return np.asarray(x, dtype=object)
    if isinstance(x, (list, tuple)):
        try:
            arr = np.asarray(x)
        except ValueError as e:
            raise DataError(f"{type(layer).__name__} '{layer.name}': the list of inputs is not rectangular ({e}); "
                            f"give an array of shape (batch,) or (batch, 1).") from None
        return arr
    arr = np.asarray(x)
    if arr.dtype.kind == "V":
        raise DataError(f"{type(layer).__name__} '{layer.name}' cannot read an input of dtype {arr.dtype}.")
    return arr


def iterate_adapt_data(data, layer, steps=None):
    """The batches `adapt` reads: an array, list or string as one batch; a dataset, PyDataset or generator
    batch by batch (`steps` batches at most). (x, y) pairs are refused: adapt learns from the inputs."""
    who = f"{type(layer).__name__} '{layer.name}'.adapt"
    if isinstance(data, (np.ndarray, list, tuple, str, bytes, RaggedTensor)) or hasattr(data, "__array__"):
        yield data
        return
    if not hasattr(data, "__iter__"):
        raise DataError(f"{who} takes an array, a list or a dataset of batches; received {type(data).__name__}.")
    for k, batch in enumerate(data):
        if steps is not None and k >= int(steps):
            break
        if isinstance(batch, tuple):
            raise DataError(f"{who} received a dataset of {len(batch)}-tuples (inputs and targets?); adapt learns "
                            f"from the inputs only: map the dataset to them first, e.g. ds.map(lambda x, y: x).")
        yield batch
