"""Keras 3's masking rules for the merge layers (`layers.merging`), on the masks symbolic inputs carry
(``_keras_mask``, from ``Embedding(mask_zero=True)``, `Masking` and the layers that pass masks on).

- Add, Subtract, Average: the values are unchanged; the output's mask is the OR of the inputs' masks
  when every input has one, else none.
- Maximum, Minimum: a masked position of one input takes the other operand's value, so masked steps do
  not win; the mask as for Add.
- Multiply: masked positions count as 1; with every input masked, positions masked in all inputs are 0
  and the mask is the OR.
- Concatenate: a mask when any input has one; an input without one counts as all unmasked; masks join
  along the concatenation axis (along the features: the OR, all True where an input has no mask).
- Dot: no mask (Keras 3's `compute_mask` returns None).
"""

from __future__ import annotations

from flexflow_keras import ops
from flexflow_keras.ops.graph import KerasTensor


def masks_of(xs) -> list:
    """Each input's mask (None for an unmasked or eager input)."""
    return [getattr(x, "_keras_mask", None) if isinstance(x, KerasTensor) else None for x in xs]


def or_masks(masks):
    """The OR of the masks when every one is given, else None."""
    if not masks or any(m is None for m in masks):
        return None
    out = masks[0]
    for m in masks[1:]:
        out = ops.logical_or(out, m)
    return out


def set_mask(output, mask):
    """Attach `mask` to a symbolic output (nothing for None or an eager result)."""
    if mask is not None and isinstance(output, KerasTensor):
        output._keras_mask = mask
    return output


def _spread(mask, x):
    """A (batch, ...) mask broadcastable against x (expanded over the features when it has one dim less)."""
    return ops.expand_dims(mask, -1) if len(mask.shape) < len(x.shape) else mask


def merge_select(op, xs, masks):
    """Maximum / Minimum with masks (Keras 3's `_apply_merge_op_and_or_mask`): (output, mask or None)."""
    output, out_mask = xs[0], masks[0]
    out_mask = _spread(out_mask, output) if out_mask is not None else None
    for x, m in zip(xs[1:], masks[1:], strict=True):
        m = _spread(m, x) if m is not None else None
        if m is not None:
            x = ops.where(m, x, output)
        if out_mask is not None:
            output = ops.where(out_mask, output, x)
        out_mask = ops.logical_or(out_mask, m) if (m is not None and out_mask is not None) else None
        output = op(output, x)
    return output, or_masks(masks) if out_mask is not None else None


def merge_multiply(xs, masks):
    """Multiply with masks (Keras 3's `Multiply`): (output, mask or None)."""
    output = None
    for x, m in zip(xs, masks, strict=True):
        if m is not None:
            x = ops.where(_spread(m, x), x, 1.0)
        output = x if output is None else ops.multiply(output, x)
    mask = or_masks(masks)
    if mask is not None:
        output = ops.where(_spread(mask, output), output, 0.0)
    return output, mask


def concat_mask(xs, masks, axis: int):
    """Concatenate's output mask (Keras 3's `Concatenate.compute_mask`), or None when no input has one."""
    if all(m is None for m in masks):
        return None
    rank = len(xs[0].shape)
    full = []
    for x, m in zip(xs, masks, strict=True):
        if m is None:
            full.append(ops.ones_like(x, dtype="bool"))
        elif len(m.shape) < rank:
            full.append(ops.logical_or(ops.expand_dims(m, -1), ops.zeros_like(x, dtype="bool")))
        else:
            full.append(m)
    return ops.any(ops.concatenate(full, axis=axis), axis=-1)
