"""Connectionist temporal classification: `CTCLossOp` (the per-sample loss and its gradient, kernels/ctc.py)
and the Keras functions on it, with TensorFlow's conventions:

- ``keras.ops.ctc_loss(target, output, target_length, output_length, mask_index=0)``: `output` holds logits
  (batch, frames, classes), the blank is `mask_index`; one loss per sample, shape (batch,).
- ``keras.backend.ctc_batch_cost(y_true, y_pred, input_length, label_length)`` (Keras 2's, kept by tf.keras):
  `y_pred` holds softmax probabilities, whose ``log(p + 1e-7)`` are the logits, the blank is the last class;
  lengths are (batch, 1); the loss is (batch, 1).
- ``ctc_decode`` (``keras.ops.ctc_decode`` / ``keras.backend.ctc_decode``): greedy decoding on arrays (the
  best class per frame, repeats merged, blanks dropped), as TensorFlow's greedy decoder; beam search is not
  implemented and says so.

A sample whose labels cannot be aligned to its frames (more labels, with the blanks that repeated ones need,
than frames) has an infinite loss and no gradient beyond the softmax's, as tf.compat.v1.nn.ctc_loss (which
ctc_batch_cost calls; tf.nn.ctc_loss v2 reports a large finite value there instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import ArgumentError, DataError, ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import deferred_check, fmt, kernel, to_host
from flexflow_keras.ops.base import Op, apply_op
from flexflow_keras.ops.graph import KerasTensor, TensorSpec
from kernels import ctc as kctc


@dataclass(frozen=True)
class CTCLossOp(Op):
    """Per-sample CTC loss of (labels (n, max_labels), outputs (n, frames, classes), label lengths (n,) or
    (n, 1), output lengths (n,) or (n, 1)) -> (n,).

    Attributes:
        blank: the blank class; -1 for the last one. from_probs: outputs are probabilities (their log plus
        epsilon are the logits) rather than logits. epsilon: added to probabilities before the log.
    """

    type_name: ClassVar[str] = "ctc_loss"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False, True, False, False)
    blank: int = -1
    from_probs: bool = False
    epsilon: float = 1e-7

    def output_specs(self, inputs, weights):
        if len(inputs) != 4:
            raise ShapeError(f"ctc_loss takes (labels, outputs, label_length, output_length), received "
                             f"{len(inputs)} inputs.")
        labels, out, label_len, out_len = inputs
        if out.ndim != 3:
            raise ShapeError(f"ctc_loss expects outputs of shape (batch, frames, classes), received "
                             f"{fmt(out.shape)}.")
        if labels.ndim != 2:
            raise ShapeError(f"ctc_loss expects labels of shape (batch, max_label_length), received "
                             f"{fmt(labels.shape)}; pad them (padded_batch, pad_sequences).")
        for name, spec in (("label_length", label_len), ("output_length", out_len)):
            if spec.ndim not in (1, 2) or (spec.ndim == 2 and spec.shape[1] != 1):
                raise ShapeError(f"ctc_loss expects {name} of shape (batch,) or (batch, 1), received "
                                 f"{fmt(spec.shape)}.")
        classes = out.shape[2]
        if classes is not None and not -classes <= self.blank < classes:
            raise ShapeError(f"ctc_loss: the blank index {self.blank} is outside the {classes} classes of the "
                             f"outputs {fmt(out.shape)}.")
        dtype = out.dtype if np.dtype(out.dtype).kind == "f" else "float32"
        return (TensorSpec((out.shape[0],), dtype),)

    def saved_specs(self, inputs, weights):
        out = inputs[1]
        return (TensorSpec(tuple(out.shape), out.dtype if np.dtype(out.dtype).kind == "f" else "float32"),)

    def tile(self, shapes, out_box, part=0, parts=1):
        lo, hi = out_box
        rows = [((lo[0],) + (0,) * (len(s) - 1), (hi[0],) + tuple(s[1:])) for s in shapes.inputs]
        saved = [((lo[0],) + (0,) * (len(s) - 1), (hi[0],) + tuple(s[1:])) for s in shapes.saved]
        return par.Tile(tuple(rows), (), (out_box,), tuple(saved))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        labels, out, label_len, out_len = inputs
        classes = tuple(out.shape)[2]
        blank = self.blank % classes

        def describe(row, _value) -> DataError:
            lab = to_host(labels)[row]
            n_lab = int(to_host(label_len).reshape(-1)[row])
            n_out = int(to_host(out_len).reshape(-1)[row])
            return DataError(f"ctc_loss: sample {ctx.batch_offset + row} has label_length {n_lab} (of "
                             f"{lab.shape[0]} label slots) and output_length {n_out} (of {tuple(out.shape)[1]} "
                             f"frames); its first labels are {lab[:max(0, min(n_lab, 8))].tolist()}. Labels must "
                             f"be class ids in [0, {classes}) other than the blank {blank}, lengths within the "
                             f"padded shapes.")

        bad = kernel(kctc, "ctc_forward", ctx)(out, labels, label_len, out_len, blank, self.from_probs,
                                               self.epsilon, outputs[0], saved[0],
                                               **deferred_check(ctx, self, describe))
        if bad >= 0:
            raise describe(bad, None)

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        dx = grad_inputs[1] if len(grad_inputs) > 1 else None
        if dx is not None:
            kernel(kctc, "ctc_backward", ctx)(saved[0], grad_outputs[0], dx, ctx.acc_input(1))


def _cast_ids(x):
    from flexflow_keras import ops

    return ops.cast(x, "int64") if isinstance(x, KerasTensor) else np.asarray(x).astype(np.int64)


def ctc_loss(target, output, target_length, output_length, mask_index=0):
    """Keras 3's `keras.ops.ctc_loss`: per-sample CTC loss, (batch,), of logits `output` (batch, frames,
    classes) for the padded labels `target` (batch, max_length); `mask_index` is the blank class.

    Example:
        >>> loss = keras.ops.ctc_loss(labels, logits, label_lengths, frame_lengths)  # (batch,)
    """
    return apply_op(CTCLossOp(blank=int(mask_index), from_probs=False),
                    [_cast_ids(target), output, _cast_ids(target_length), _cast_ids(output_length)])


def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    """Keras 2's `keras.backend.ctc_batch_cost`: (batch, 1) CTC loss of softmax probabilities `y_pred`
    (batch, frames, classes), the blank being the last class; `input_length` / `label_length` are (batch, 1).
    """
    from flexflow_keras import ops

    loss = apply_op(CTCLossOp(blank=-1, from_probs=True, epsilon=1e-7),
                    [_cast_ids(y_true), y_pred, _cast_ids(label_length), _cast_ids(input_length)])
    return ops.expand_dims(loss, -1)


def _greedy(y_pred, input_length, blank: int, of_probs: bool, dtype):
    """TensorFlow's greedy decoder on arrays: (decoded (batch, frames) padded with -1, the negative sum of each
    frame's best input (batch, 1)); `of_probs` takes ``log(p + 1e-7)`` of probabilities first, as Keras 2's."""
    from flexflow_keras.ops.eager_tensor import EagerTensor

    if isinstance(y_pred, KerasTensor):
        raise ArgumentError("ctc_decode decodes predictions (arrays, e.g. model.predict's), not a model's symbolic "
                            "tensor; decode after predict().")
    scores_in = np.asarray(y_pred, dtype=np.float64)
    if scores_in.ndim != 3:
        raise ArgumentError(f"ctc_decode expects predictions of shape (batch, frames, classes), received "
                            f"{scores_in.shape}.")
    n, frames, classes = scores_in.shape
    lengths = np.asarray(input_length).reshape(-1).astype(np.int64)
    if lengths.shape != (n,):
        raise ArgumentError(f"ctc_decode expects one length per sample ({n}), received input_length of shape "
                            f"{np.shape(input_length)}.")
    if of_probs:
        scores_in = np.log(scores_in + 1e-7)
    blank %= classes
    dense = np.full((n, frames), -1, dtype=dtype)
    scores = np.zeros((n, 1), dtype=np.float32)
    for i in range(n):
        frame_scores = scores_in[i, :max(0, min(int(lengths[i]), frames))]
        path = frame_scores.argmax(-1)
        keep = [int(c) for j, c in enumerate(path) if c != blank and (j == 0 or c != path[j - 1])]
        dense[i, :len(keep)] = keep
        scores[i, 0] = -frame_scores.max(-1).sum()
    return dense.view(EagerTensor), scores.view(EagerTensor)


def _no_beam(who: str):
    raise ArgumentError(f"{who}: beam-search CTC decoding is not implemented in flexflow_keras; decode greedily "
                        f"(greedy=True / strategy='greedy'), which takes the best class per frame.")


def ctc_decode(inputs, sequence_lengths, strategy="greedy", beam_width=100, top_paths=1, merge_repeated=True,
               mask_index=0):
    """Keras 3's `keras.ops.ctc_decode` (greedy) of logits: (decoded int32 (1, batch, frames) padded with -1,
    scores (batch, 1)), the blank being `mask_index`."""
    if strategy != "greedy":
        _no_beam(f"keras.ops.ctc_decode(strategy={strategy!r})")
    if not merge_repeated:
        raise ArgumentError("keras.ops.ctc_decode(merge_repeated=False) is not implemented; greedy decoding here "
                            "merges repeated classes, as TensorFlow's default.")
    dense, scores = _greedy(inputs, sequence_lengths, int(mask_index), False, np.int32)
    return dense[None], scores


def backend_ctc_decode(y_pred, input_length, greedy=True, beam_width=100, top_paths=1):
    """Keras 2's `keras.backend.ctc_decode` (greedy) of probabilities: ([decoded int64 (batch, frames) padded
    with -1], negative log probabilities (batch, 1)), the blank being the last class."""
    if not greedy:
        _no_beam("keras.backend.ctc_decode(greedy=False)")
    dense, scores = _greedy(y_pred, input_length, -1, True, np.int64)
    return [dense], scores


__all__ = ["CTCLossOp", "ctc_batch_cost", "ctc_decode", "ctc_loss"]
