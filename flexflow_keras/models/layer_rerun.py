"""A functional model applied to symbolic tensors that carry Keras masks: its layer calls made again on them.

A model used as a layer records its op graph again on the new tensors (layers/eager.clone_graph), which
keeps every decision its layers took when the model was built. Keras 3 instead runs the model's layers on
the new tensors (Functional._run_through_graph), with the masks of the call attached to them, so a layer
that reads its inputs' masks (MultiHeadAttention's value mask, an RNN, a custom ``call(x, mask=None)``)
sees the masks the caller's tensors carry: keras.io's neural_machine_translation_with_transformer calls its
decoder model on the encoder's output, whose padding mask masks the decoder's cross-attention.
`rerun_layers` does that; `needs_rerun` says when it changes anything (some new tensor carries a mask).
A Sequential model (models/sequential.py) calls its layers in turn on such a tensor, as Keras does.
"""

from __future__ import annotations

from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.utils import tree


def attach_masks(flat, mask) -> None:
    """Keras 3's Functional.call: each given mask goes onto its input tensor (one lacking a mask of its own)."""
    if mask is None:
        return
    masks = tree.flatten(mask) if isinstance(mask, (list, tuple, dict)) else [mask]
    if len(masks) != len(flat):
        return
    for x, m in zip(flat, masks, strict=True):
        if m is not None and isinstance(x, KerasTensor) and getattr(x, "_keras_mask", None) is None:
            x._keras_mask = m


def needs_rerun(flat) -> bool:
    """Whether any of the new symbolic inputs carries a Keras mask."""
    return any(isinstance(x, KerasTensor) and getattr(x, "_keras_mask", None) is not None for x in flat)


def rerun_layers(model, flat) -> list[KerasTensor] | None:
    """`model`'s layer calls made again on `flat` (its inputs' new tensors), inputs first, as Keras 3 runs a
    functional model; its outputs' new tensors, or None when a call reads a tensor the model does not
    produce from its inputs (the caller records the op graph again instead)."""
    mapping = {t.uid: x for t, x in zip(model._inputs, flat, strict=True)}

    def new(x):
        if not isinstance(x, KerasTensor):
            return x
        if x.uid not in mapping:
            raise KeyError(x.uid)
        return mapping[x.uid]

    for nodes in model._nodes_by_depth.values():  # deepest first: the inputs' side
        for node in nodes:
            if node.is_input or all(t.uid in mapping for t in node.output_tensors):
                continue
            try:
                args = [tree.map_structure(new, a) for a in node.call_args]
                kwargs = {k: tree.map_structure(new, v) for k, v in node.call_kwargs.items()}
            except KeyError:
                return None
            outputs = [t for t in tree.flatten(node.operation(*args, **kwargs)) if isinstance(t, KerasTensor)]
            mapping.update({t.uid: o for t, o in zip(node.output_tensors, outputs, strict=False)})
    if any(t.uid not in mapping for t in model._outputs):
        return None
    return [mapping[t.uid] for t in model._outputs]
