"""A layer's `activity_regularizer` (the constructor argument every Keras layer takes): Keras 3's
`Layer.__call__` adds ``regularizer(output) / batch_size`` for each tensor the call returns (a rank-0 output
is not divided) as a loss of the layer. Symbolically the term joins the training loss of the model through
`add_loss` and trains through the ops it is made of; eagerly it is kept in `layer.losses`.

The built-in L1 / L2 / L1L2 compute their penalty on NumPy arrays (regularizers.py, for weights), so their
activity value is composed here from keras.ops (``l1 * sum|x| + l2 * sum x**2``, Keras' formula); any other
regularizer (a user's `Regularizer` subclass, a function) is called on the output as Keras calls it.

A user's regularizer that mixes rows of different samples (an op over two batch dims, a reshape joining
samples: a `CrossBatchError` while it is traced, keras.io's PointNet's ``tf.tensordot(x, x, axes=(2, 2))``)
is computed on the whole batch at run time instead (ops/whole_batch.py), with its gradient: TensorFlow's
numbers, where a graph split by samples could not hold its intermediate tensors.

The batch size is ``ops.shape(output)[0]``, the step's rows of that output (a folded tensor's rows included,
ops/dynamic_dims.py), as TensorFlow's shape gives it.
"""

from __future__ import annotations

import logging

from flexflow_keras.errors import CrossBatchError
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.utils import tree

log = logging.getLogger("flexflow_keras")


def add(layer, outputs) -> None:
    """Add `layer`'s activity penalty of `outputs` to its losses (nothing without a regularizer)."""
    regularizer = getattr(layer, "activity_regularizer", None)
    if regularizer is None:
        return
    from flexflow_keras import ops

    for out in tree.flatten(outputs):
        if not hasattr(out, "shape") or not hasattr(out, "dtype"):
            continue  # only tensors are penalised (Keras: backend.is_tensor)
        loss = _value(regularizer, out)
        if len(out.shape) > 0:
            loss = ops.divide(loss, ops.cast(ops.shape(out)[0], str(getattr(loss, "dtype", "float32"))))
        layer.add_loss(loss)


def _value(regularizer, out):
    """``regularizer(out)``, with the built-in L1L2 family written in keras.ops so that it works on graph
    tensors and trains."""
    from flexflow_keras import ops, regularizers

    if not isinstance(regularizer, regularizers.L1L2) or type(regularizer).__call__ is not (
            regularizers.Regularizer.__call__):
        try:
            value = regularizer(out)
            if not _holds_two_batch_dims(value, out):
                return value
            why = "a tensor of its trace has two dims of the batch's size (ops.matmul(x, ops.transpose(x)))"
        except CrossBatchError as e:  # it mixes the samples (PointNet's tensordot over the batch)
            if not isinstance(out, KerasTensor):
                raise
            why = str(e)
        from flexflow_keras.ops.whole_batch import whole_batch_penalty

        log.info("activity_regularizer %r: %s; computed on the whole batch at run time", regularizer, why)
        return whole_batch_penalty(regularizer, out, f"activity_regularizer {type(regularizer).__name__}")
    total = ops.multiply(ops.sum(out), 0.0)
    if regularizer.l1:
        total = ops.add(total, ops.multiply(ops.sum(ops.abs(out)), regularizer.l1))
    if regularizer.l2:
        total = ops.add(total, ops.multiply(ops.sum(ops.square(out)), regularizer.l2))
    return total


def _holds_two_batch_dims(value, out) -> bool:
    """Whether the symbolic penalty `value` of `out` (whose only open dim is the batch) goes through a tensor
    with two open dims: both are then the batch's size (a product over the batch), which the graph records but
    sizes by one batch (a reshape of it to (-1, ...) would count the wrong rows), so it runs whole instead."""
    if not isinstance(value, KerasTensor) or not isinstance(out, KerasTensor) or list(out.shape).count(None) != 1:
        return False
    seen, stack = set(), [value]
    while stack:
        t = stack.pop()
        if t is out or id(t) in seen:
            continue
        seen.add(id(t))
        if list(t.shape).count(None) > 1:
            return True
        node = getattr(t, "node", None)
        stack.extend(i for i in getattr(node, "inputs", ()) if isinstance(i, KerasTensor))
    return False
