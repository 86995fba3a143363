"""Keras 3's masks around a layer's call: which mask arguments a call gets (`call_masks`), and the
`compute_mask` hook: a layer that defines ``compute_mask(inputs, mask)`` (custom layers, as in the keras.io
masking guide) sets its outputs' masks from it.

A call gets its inputs' masks as Keras 3's ``Layer.__call__`` hands them: when exactly one argument of the
call is a tensor (or a structure of tensors), an unset ``mask`` parameter gets that argument's mask (a
structure of masks for a structure); when several are, each tensor argument ``name`` with an unset
``name_mask`` parameter gets its mask, and ``mask`` gets nothing (an RNN given ``initial_state`` tensors,
keras.io's TransformerDecoder called on ``(x, encoder_outputs)``: Keras leaves their ``mask`` None).

The mask handed to the hook is the ``mask=`` the layer was called with, else the masks the inputs carry
(one per input for a list); the hook's result (a mask, or a list for several outputs) is attached to each
output that has no mask yet. Layers without the hook keep the default rule (`Layer.supports_masking`
passes the input's mask on). As in Keras 3, this holds for eager calls too: an eager output (an EagerTensor)
carries its mask as ``_keras_mask`` (``Embedding(mask_zero=True)(padded)._keras_mask``, keras.io's masking
guide), and a later eager call taking ``mask`` receives it.
"""

from __future__ import annotations

import inspect

import numpy as np

from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.utils import tree


def _is_tensor(x) -> bool:
    return isinstance(x, (KerasTensor, np.ndarray))  # eager tensors are arrays; Keras converts arrays too


def _tensor_arguments(signature, args, kwargs) -> dict | None:
    """The call's arguments that are tensors or non-empty structures of tensors (None allowed inside), by
    parameter name, as Keras 3's CallSpec counts them; None when the arguments do not bind."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None  # the call itself reports the mismatch
    found = {}
    for name, value in bound.arguments.items():
        if _is_tensor(value):
            found[name] = value
        elif isinstance(value, (list, tuple, dict)) and len(value) > 0:
            flat = tree.flatten(value)
            if any(_is_tensor(x) for x in flat) and all(x is None or _is_tensor(x) for x in flat):
                found[name] = value
    return found


def _carried(value):
    return tree.map_structure(lambda t: getattr(t, "_keras_mask", None), value)


def call_masks(layer, params, args, kwargs) -> dict:
    """The mask keywords Keras 3 adds to ``layer.call(*args, **kwargs)`` (see the module docstring): a
    dict of parameter name -> mask for the parameters the call leaves unset; empty when none apply."""
    if "mask" not in params and not any(p.endswith("_mask") for p in params):
        return {}
    signature = layer.__dict__.get("_ff_call_signature")
    if signature is None:
        signature = layer.__dict__["_ff_call_signature"] = inspect.signature(layer.call)
    tensors = _tensor_arguments(signature, args, kwargs)
    if not tensors:
        return {}
    if len(tensors) == 1:
        if "mask" in params and kwargs.get("mask") is None:
            mask = _carried(next(iter(tensors.values())))
            return {} if mask is None else {"mask": mask}
        return {}
    masks = {f"{name}_mask": _carried(value) for name, value in tensors.items()
             if f"{name}_mask" in params and kwargs.get(f"{name}_mask") is None}
    return {name: mask for name, mask in masks.items() if mask is not None}


def has_compute_mask(layer) -> bool:
    """Whether `layer` defines Keras' `compute_mask` hook."""
    return callable(getattr(layer, "compute_mask", None))


def _mask_of(t):
    return getattr(t, "_keras_mask", None) if _carries_mask(t) else None


def _carries_mask(t) -> bool:
    """A symbolic tensor, or an eager one (an ndarray subclass with attributes: EagerTensor)."""
    return isinstance(t, KerasTensor) or (isinstance(t, np.ndarray) and hasattr(t, "__dict__"))


def set_mask(t, mask) -> None:
    """Attach `mask` to tensor `t` (Keras' backend.set_keras_mask); an eager mask is made eager too."""
    if not isinstance(t, KerasTensor) and not isinstance(mask, KerasTensor):
        from flexflow_keras.ops.eager_tensor import as_eager

        mask = as_eager(np.asarray(mask))
    t._keras_mask = mask


def pass_mask(inputs, outputs) -> None:
    """Keras' default `compute_mask` of a masking-aware layer: the input's mask (of a list of inputs, the
    first one's), when the output keeps its leading (batch, time) dims and has no mask of its own."""
    mask = getattr(inputs, "_keras_mask", None)
    if mask is None and isinstance(inputs, (list, tuple)) and inputs:  # Keras 3: the first input's mask
        mask = getattr(inputs[0], "_keras_mask", None)
    if (mask is not None and _carries_mask(outputs) and getattr(outputs, "_keras_mask", None) is None
            and tuple(outputs.shape[:len(mask.shape)]) == tuple(mask.shape)):
        set_mask(outputs, mask)


def apply_compute_mask(layer, inputs, mask, outputs) -> None:
    """Attach ``layer.compute_mask(inputs, previous_mask)`` to the outputs lacking a mask."""
    flat_out = [t for t in tree.flatten(outputs) if _carries_mask(t)]
    if not flat_out or all(_mask_of(t) is not None for t in flat_out):
        return
    if mask is None:
        mask = [_mask_of(t) for t in inputs] if isinstance(inputs, (list, tuple)) else _mask_of(inputs)
    out_masks = layer.compute_mask(inputs, mask)
    if out_masks is None:
        return
    masks = list(out_masks) if isinstance(out_masks, (list, tuple)) else [out_masks]
    for t, m in zip(flat_out, masks, strict=False):
        if m is not None and _mask_of(t) is None:
            set_mask(t, m)
