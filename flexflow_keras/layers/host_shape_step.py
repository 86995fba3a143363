"""Shape ops in front of a host layer: ``lookup(keras.ops.expand_dims(string_input, -1))`` (keras.io's
structured-data examples reshape a model input before a StringLookup or IntegerLookup).

A host layer reads model inputs only (`layers/host_prefix.py`), while ``ops.expand_dims``, ``ops.reshape``,
``ops.squeeze`` and ``ops.transpose`` on a symbolic tensor record an op of the graph. `hoist` walks back
from the tensor a host layer is called on through such shape ops to a model input (or a host output), and
records each as a host step (`HostShapeStep`, NumPy on the host) instead, so the host layer reads the
result of steps that all run before the graph. The recorded graph ops are left unused.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.layers.host_layer import HostLayer
from flexflow_keras.ops.dynamic_dims import InsertAxisOp
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.ops.shape_ops import ReshapeOp, TransposeOp

_SHAPE_OPS = (ReshapeOp, InsertAxisOp, TransposeOp)


class HostShapeStep(HostLayer):
    """One shape op (reshape, insert axis, transpose) run with NumPy on the host on `dtype` data."""

    def __init__(self, op, dtype: str, out_shape: tuple, **kwargs):
        super().__init__(**kwargs)
        self.op = op
        self._dtype = dtype
        self._out_shape = tuple(out_shape)

    def output_dtype(self) -> str:
        return self._dtype

    def compute_output_shape(self, input_shape):
        return self._out_shape

    def host_call(self, inputs):
        arr = np.asarray(inputs)
        if isinstance(self.op, ReshapeOp):
            return arr.reshape(tuple(-1 if s is None else int(s) for s in self.op.shape))
        if isinstance(self.op, InsertAxisOp):
            return np.expand_dims(arr, self.op.axis)
        return np.transpose(arr, self.op.perm)


def is_model_input(t: KerasTensor) -> bool:
    """Whether `t` is a model input (a declared Input, or a host step's output, which stands for one)."""
    hist = t._keras_history
    return t.node is None and (hist is None or hist.operation._inbound_nodes[hist.node_index].is_input)


def hoist(t: KerasTensor) -> KerasTensor | None:
    """`t` as the output of host steps, when it is made from a model input by shape ops only; else None.

    Each tensor is hoisted once (the host output is kept on it), so two lookups on one reshaped input
    share the step.
    """
    if is_model_input(t):
        return t
    done = t.__dict__.get("_hoisted")
    if done is not None:
        return done
    node = t.node
    if node is None or not isinstance(node.op, _SHAPE_OPS) or len(node.inputs) != 1:
        return None
    src = hoist(node.inputs[0])
    if src is None:
        return None
    from flexflow_keras.layers import host_prefix

    step = HostShapeStep(node.op, t.dtype, t.shape, name=f"{node.name}_host")
    out = host_prefix.record(step, src)
    t._hoisted = out
    return out


class ShapeStandIn(HostLayer):
    """Zeros (float32) in the shape of a string input: what the graph reads for ``ops.shape(strings)``
    (``tf.zeros((tf.shape(inputs)[0], 64))`` in a layer's call on a string Input, keras.io's mixed-dimension
    embedding), since the graph holds no strings."""

    def output_dtype(self) -> str:
        return "float32"

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def host_call(self, inputs):
        return np.zeros(np.shape(inputs), np.float32)


def numeric_stand_in(t: KerasTensor) -> KerasTensor:
    """A string tensor's `ShapeStandIn` output (one per tensor), for the graph to read its shape from."""
    done = t.__dict__.get("_shape_stand_in")
    if done is None:
        done = ShapeStandIn(name=f"shape_of_{t.name.split(':')[0]}")(t)
        t.__dict__["_shape_stand_in"] = done
    return done
