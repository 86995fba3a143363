"""Ops that a recorded layer call fixes in inference mode, whatever the execution's mode.

A recorded graph serves training and inference alike: its Dropout, noise, augmentation and
BatchNormalization ops follow the execution's mode at run time. Keras 3 decides each layer call's
`training` in Python instead (an explicit argument, else the value the enclosing call left in the call
context, else the default of the layer's call() signature), so inside a subclassed model's call() a
layer may run in inference during fit: a call() without `training`, which Keras' train_step calls as
``self(x)``, or a sublayer given ``training=False`` (a frozen base model). While such a call is recorded
(`push(True)` by `Layer.__call__`), `at_inference` turns each op it records into the op as it
computes at inference: the random ops with a zero rate, BatchNormalization on its moving statistics.
"""

from __future__ import annotations

import dataclasses
import threading

_state = threading.local()

# ops whose inference form is themselves with no noise (field set to zero); the augmentation ops are
# the identity at inference (`graph.INFERENCE_IDENTITY`) and are dropped by the caller
_ZEROED = {"dropout": ("rate",), "gaussian_noise": ("stddev",), "alpha_dropout": ("rate",),
           "recurrent": ("dropout", "recurrent_dropout")}
IDENTITY_AT_INFERENCE = frozenset({"image_affine", "image_value"})


def _stack() -> list:
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


def push(fixed: bool | None) -> None:
    """Record the ops of a layer call in inference mode (True), following the execution (False), or as
    the enclosing call does (None); the call pops it in its own `finally` (`pop`)."""
    _stack().append(fixed)


def pop() -> None:
    _stack().pop()


def fixed() -> bool:
    """Whether ops recorded now are fixed in inference mode."""
    for value in reversed(_stack()):
        if value is not None:
            return value
    return False


def at_inference(op):
    """`op` as it computes at inference, or None where that is the identity of its one input."""
    name = getattr(op, "type_name", "")
    if name in IDENTITY_AT_INFERENCE:
        return None
    if name == "batch_norm" and op.training is None:
        return dataclasses.replace(op, training=False)
    if getattr(op, "always", False):  # given training=True: Keras applies it in an inference call too
        return op
    zeroed = {f: 0.0 for f in _ZEROED.get(name, ()) if getattr(op, f, 0)}
    return dataclasses.replace(op, **zeroed) if zeroed else op


def comparable(op):
    """`op` as two traces compare it for inference (`graph.same_graph`): a BatchNormalization fixed in
    inference mode computes there what one following the execution computes, and a recurrent op's
    dropout rates change nothing."""
    name = getattr(op, "type_name", "")
    if name == "batch_norm" and op.training is False:
        return dataclasses.replace(op, training=None)
    return at_inference(op) if name == "recurrent" else op
