"""Connectionist temporal classification: `CTCLossOp` (the per-sample loss and its gradient, kernels/ctc.py)
and the Keras functions on it, with TensorFlow's conventions:

- ``keras.ops.ctc_loss(target, output, target_length, output_length, mask_index=0)``: `output` holds logits
  (batch, frames, classes), the blank is `mask_index`; one loss per sample, shape (batch,).
- ``keras.backend.ctc_batch_cost(y_true, y_pred, input_length, label_length)`` (Keras 2's, kept by tf.keras):
  `y_pred` holds softmax probabilities, whose ``log(p + 1e-7)`` are the logits, the blank is the last class;
  lengths are (batch, 1); the loss is (batch, 1).
- ``ctc_decode`` (``keras.ops.ctc_decode`` / ``keras.backend.ctc_decode``) on arrays, after predict: greedy
  (the best class per frame, repeats merged, blanks dropped), as TensorFlow's greedy decoder, or TensorFlow's
  prefix beam search (ops/ctc_beam.py). keras.ops' beam search moves the `mask_index` class last (TensorFlow's
  blank), decodes with tf.nn.ctc_beam_search_decoder's conventions (repeated labels kept as scored: Keras 3's
  `merge_repeated` does not reach it) and maps the ids back; keras.backend's (Keras 2's) decodes
  ``log(p + 1e-7)`` of probabilities, the blank last, with tf.compat.v1's (repeated labels merged).

A sample whose labels cannot be aligned to its frames (more labels, with the blanks that repeated ones need,
than frames) has an infinite loss and no gradient beyond the softmax's, as tf.compat.v1.nn.ctc_loss (which
ctc_batch_cost calls; tf.nn.ctc_loss v2 reports a large finite value there instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import ArgumentError, DataError, ShapeError
from flexflow_keras.ops import ctc_beam
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


def _predictions(who: str, y_pred, input_length, of_probs: bool):
    """(scores (batch, frames, classes) float64, lengths (batch,) int64) of predictions; `of_probs` takes
    ``log(p + 1e-7)`` of probabilities, as Keras 2's."""
    if isinstance(y_pred, KerasTensor):
        raise ArgumentError(f"{who} decodes predictions (arrays, e.g. model.predict's), not a model's symbolic "
                            f"tensor; decode after predict().")
    scores = np.asarray(y_pred, dtype=np.float64)
    if scores.ndim != 3:
        raise ArgumentError(f"{who} expects predictions of shape (batch, frames, classes), received "
                            f"{scores.shape}.")
    lengths = np.asarray(input_length).reshape(-1)
    if lengths.shape != (scores.shape[0],):
        raise ArgumentError(f"{who} expects one length per sample ({scores.shape[0]}), received input_length of "
                            f"shape {np.shape(input_length)}.")
    lengths = lengths.astype(np.int64)
    return (np.log(scores + 1e-7) if of_probs else scores), lengths


def _dense(paths: list[list[int]], frames: int, dtype) -> np.ndarray:
    """Paths as rows (batch, frames) padded with -1, as Keras densifies TensorFlow's sparse paths."""
    dense = np.full((len(paths), frames), -1, dtype=dtype)
    for i, path in enumerate(paths):
        dense[i, :len(path)] = path
    return dense


def _greedy(who: str, y_pred, input_length, blank: int, of_probs: bool, merge_repeated: bool, dtype):
    """TensorFlow's greedy decoder on arrays: (decoded (batch, frames) padded with -1, the negative sum of each
    frame's best input (batch, 1))."""
    from flexflow_keras.ops.eager_tensor import EagerTensor

    scores, lengths = _predictions(who, y_pred, input_length, of_probs)
    lengths = np.clip(lengths, 0, scores.shape[1])  # greedy decoding reads the frames there are
    paths, neg = ctc_beam.greedy_paths(scores, lengths, blank % scores.shape[2], merge_repeated)
    return _dense(paths, scores.shape[1], dtype).view(EagerTensor), neg.astype(np.float32).view(EagerTensor)


def ctc_decode(inputs, sequence_lengths, strategy="greedy", beam_width=100, top_paths=1, merge_repeated=True,
               mask_index=0):
    """Keras 3's `keras.ops.ctc_decode` of logits (batch, frames, classes), the blank being `mask_index`.

    Returns (decoded int32 (top_paths, batch, frames) padded with -1, scores): greedy, one path and the negative
    sum of each frame's best logit (batch, 1); "beam_search", TensorFlow's beam search (repeated labels kept,
    whatever `merge_repeated`, as Keras 3 on TensorFlow) and each path's log probability (batch, top_paths).

    Example:
        >>> decoded, scores = keras.ops.ctc_decode(logits, lengths, strategy="beam_search", beam_width=10)
        >>> decoded[0]  # the best path of each sample, padded with -1
    """
    from flexflow_keras.ops.eager_tensor import EagerTensor

    who = f"keras.ops.ctc_decode(strategy={strategy!r})"
    if strategy == "greedy":
        dense, scores = _greedy(who, inputs, sequence_lengths, int(mask_index), False, bool(merge_repeated),
                                np.int32)
        return dense[None], scores
    if strategy != "beam_search":
        raise ArgumentError(f"keras.ops.ctc_decode expects strategy 'greedy' or 'beam_search', received "
                            f"strategy={strategy!r}.")
    scores, lengths = _predictions(who, inputs, sequence_lengths, False)
    classes = scores.shape[2]
    blank = None if mask_index is None else int(mask_index)
    if blank is not None:
        if not -classes <= blank < classes:
            raise ArgumentError(f"{who} expects mask_index in [{-classes}, {classes}) for {classes} classes, "
                                f"received mask_index={mask_index}.")
        blank %= classes
        scores = np.concatenate([np.delete(scores, blank, axis=2), scores[..., blank:blank + 1]], axis=2)
    paths, log_probs = ctc_beam.beam_search(scores, lengths, beam_width, top_paths, False, who)
    decoded = np.stack([_dense(p, scores.shape[1], np.int32) for p in paths])
    if blank is not None:  # the ids after the moved blank move back up
        decoded = np.where(decoded >= blank, decoded + 1, decoded)
    return decoded.view(EagerTensor), log_probs.astype(np.float32).view(EagerTensor)


def backend_ctc_decode(y_pred, input_length, greedy=True, beam_width=100, top_paths=1):
    """Keras 2's `keras.backend.ctc_decode` of softmax probabilities (batch, frames, classes), the blank being the
    last class: ([decoded int64 (batch, frames) padded with -1, one per path], scores). Greedy: one path and the
    negative sum of each frame's best ``log(p + 1e-7)`` (batch, 1); beam search (``greedy=False``): TensorFlow's
    with tf.compat.v1's merged repeats, and each path's log probability (batch, top_paths).
    """
    from flexflow_keras.ops.eager_tensor import EagerTensor

    who = f"keras.backend.ctc_decode(greedy={greedy!r})"
    if greedy:
        dense, scores = _greedy(who, y_pred, input_length, -1, True, True, np.int64)
        return [dense], scores
    scores, lengths = _predictions(who, y_pred, input_length, True)
    paths, log_probs = ctc_beam.beam_search(scores, lengths, beam_width, top_paths, True, who)
    return ([_dense(p, scores.shape[1], np.int64).view(EagerTensor) for p in paths],
            log_probs.astype(np.float32).view(EagerTensor))


__all__ = ["CTCLossOp", "ctc_batch_cost", "ctc_decode", "ctc_loss"]
