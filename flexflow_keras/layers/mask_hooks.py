"""Keras 3's `compute_mask` hook: a layer that defines ``compute_mask(inputs, mask)`` (custom layers, as
in the keras.io masking guide) sets its outputs' masks from it.

The mask handed to the hook is the ``mask=`` the layer was called with, else the masks the inputs carry
(one per input for a list); the hook's result (a mask, or a list for several outputs) is attached to each
output that has no mask yet. Layers without the hook keep the default rule (`Layer.supports_masking`
passes the input's mask on).
"""

from __future__ import annotations

from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.utils import tree


def has_compute_mask(layer) -> bool:
    """Whether `layer` defines Keras' `compute_mask` hook."""
    return callable(getattr(layer, "compute_mask", None))


def _mask_of(t):
    return getattr(t, "_keras_mask", None) if isinstance(t, KerasTensor) else None


def apply_compute_mask(layer, inputs, mask, outputs) -> None:
    """Attach ``layer.compute_mask(inputs, previous_mask)`` to the symbolic outputs lacking a mask."""
    flat_out = [t for t in tree.flatten(outputs) if isinstance(t, KerasTensor)]
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
            t._keras_mask = m
