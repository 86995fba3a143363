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

Any other symbolic assign (a counter or running value kept across steps) is refused with a message.
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


def _refuse(variable, value, why: str):
    return GraphError(
        f"Variable '{variable.path}'.assign({value!r}) inside a layer's call(): {why}. Writing a weight during the "
        f"training step is not supported, except the masked weight `w.assign(w * mask)` with a constant mask of "
        f"zeros and ones (keras.io's PixelCNN). Compute the value and use it directly in call() (an op given a "
        f"computed kernel trains the weight it is computed from), or update the weight between steps in a "
        f"callback.")


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
