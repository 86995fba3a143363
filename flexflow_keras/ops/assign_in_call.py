"""A weight assigned a symbolic tensor inside a layer's call(): the masked weight.

keras.io's PixelCNN masks its convolution kernels in call(), ``self.conv.kernel.assign(self.conv.kernel *
self.mask)`` before ``self.conv(inputs)``, and Keras runs that assign at every step, so the convolution
always reads the masked kernel. Writing a weight in the middle of a step is not something the execution
does, so the one form taken is this one, ``w.assign(w * mask)`` with a constant mask of zeros and ones,
whose effect is reproduced exactly:

- the host value is masked when the call is recorded (as TensorFlow's first step leaves it);
- for the rest of the outermost symbolic call, reads of ``w`` (as an op's weight, or as a tensor) take the
  recorded product ``w * mask``, so the convolution runs on the masked kernel (ops/weights_as_inputs.py)
  and the masked entries get a zero gradient: they stay zero, and the other entries train as under
  TensorFlow (for element-wise optimizers: TensorFlow's gradient also has entries where the mask is zero,
  which its next assign discards, but a norm clip would count them).

The stored value is masked when the call is recorded; weights set later (set_weights, load_weights) keep
what they are given in the masked entries, which no forward reads (TensorFlow's storage holds the masked
value after a forward and the optimizer's update of those entries after a step).

Any other symbolic assign (a counter or running value kept across steps, keras.io's mixture of experts'
``self.expert_usage_count.assign(...)``) is refused with an `AssignInCallError` naming the layer and the
variable; fit and evaluate of a model with its own train_step / test_step then run that step eagerly
(models/eager_fit.py), where the assign takes its value as under TensorFlow.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import GraphError

_overrides: dict[int, object] = {}  # Variable.uid -> the KerasTensor its reads take while the call records


def read(variable):
    """The tensor that stands for `variable` after an assign in the call being recorded, or None."""
    return _overrides.get(variable.uid) if _overrides else None


def substitute(weights):
    """`weights` with each assigned Variable replaced by the tensor it was assigned."""
    if not _overrides:
        return weights
    return [(_overrides.get(w.uid, w) if hasattr(w, "uid") else w) for w in weights]


def clear() -> None:
    """Forget the assigns (the outermost symbolic call has ended)."""
    _overrides.clear()


def _uncast(tensor):
    """`tensor` before the casts to the product's dtype that Keras' dtype rule puts in ``w * mask``."""
    from flexflow_keras.ops.math_ops import CastOp

    while isinstance(tensor.node.op, CastOp):
        tensor = tensor.node.inputs[0]
    return tensor


def _constant_mask(tensor):
    """The value of a recorded constant (a non-trainable weight read by a VariableOp), or None."""
    from flexflow_keras.ops.nn_ops import VariableOp

    node = _uncast(tensor).node
    if not isinstance(node.op, VariableOp) or len(node.weights) != 1 or node.weights[0].trainable:
        return None
    return np.asarray(node.weights[0].value)


def _reads(tensor, variable) -> bool:
    from flexflow_keras.ops.nn_ops import VariableOp

    node = _uncast(tensor).node
    return isinstance(node.op, VariableOp) and len(node.weights) == 1 and node.weights[0] is variable


class AssignInCallError(GraphError):
    """A layer's call() assigns a variable a computed value the traced step cannot hold. `where` names the
    layer and the variable (``layer 'moe' (LinearMoE), self.expert_usage_count (path 'variable')``)."""

    def __init__(self, message: str, where: str):
        super().__init__(message)
        self.where = where


def _where(variable) -> str:
    """The layer whose call() is running and the attribute that holds `variable` there, with its path."""
    from flexflow_keras.layers import node as node_mod

    layer = node_mod.current_layer()
    if layer is None:
        return f"variable '{variable.path}'"
    attr = next((k for k, v in vars(layer).items() if v is variable), None)
    held = f"self.{attr}" if attr else "a variable"
    return f"layer '{layer.name}' ({type(layer).__name__}), {held} (path '{variable.path}')"


def refuse_update(variable, method: str, value) -> AssignInCallError:
    """The error for ``variable.assign_add(value)`` / ``assign_sub`` of a symbolic `value` (a running value
    kept across steps, which a traced step cannot hold)."""
    return _refuse(variable, value, "it updates a value kept across training steps", method)


def _refuse(variable, value, why: str, method: str = "assign"):
    where = _where(variable)
    return AssignInCallError(
        f"{where[0].upper()}{where[1:]}: .{method}({value!r}) inside call(): {why}. A traced training step "
        f"cannot write a variable, except the masked weight `w.assign(w * mask)` with a constant mask of zeros "
        f"and ones (keras.io's PixelCNN). A model with its own train_step (and test_step) runs it eagerly "
        f"instead, as compile(run_eagerly=True) does; otherwise compute the value and use it directly in "
        f"call(), or update the variable between steps in a callback.", where)


def assign(variable, value) -> None:
    """`variable.assign(value)` for a symbolic `value` (see the module docstring)."""
    from flexflow_keras.ops.functional import _symbolic_calls
    from flexflow_keras.ops.math_ops import MultiplyOp

    if _symbolic_calls[0] == 0:
        raise _refuse(variable, value, "the value is a symbolic tensor, which holds no numbers outside a call")
    node = value.node
    if not isinstance(node.op, MultiplyOp) or len(node.inputs) != 2:
        raise _refuse(variable, value, "the value is not the weight times a constant mask")
    a, b = node.inputs
    if _reads(b, variable):
        a, b = b, a
    mask = _constant_mask(b) if _reads(a, variable) else None
    if mask is None:
        raise _refuse(variable, value, "the value is not the weight times a constant mask")
    if tuple(value.shape) != variable.shape or not np.isin(mask, (0, 1)).all():
        raise _refuse(variable, value, f"the mask (shape {mask.shape}) must hold only zeros and ones and keep the "
                                       f"weight's shape {variable.shape}")
    variable.assign(np.asarray(variable.value) * np.broadcast_to(mask, variable.shape).astype(variable.dtype))
    _overrides[variable.uid] = value
