"""Beam-search CTC decoding on arrays, as TensorFlow's CTC beam search decoder (a prefix beam search,
tensorflow/core/util/ctc/ctc_beam_search.h), and the sparse value its paths come back in: `beam_search` (per
sample paths and scores, for keras.ops.ctc_decode / keras.backend.ctc_decode, ops/ctc.py),
`ctc_beam_search_decoder` (tf.nn's) and `ctc_beam_search_decoder_v1` (tf.compat.v1's), `greedy_decoder`
(tf.nn.ctc_greedy_decoder), `SparseTensorValue` and `sparse_to_dense` (tf.sparse.to_dense of those values).

The search, per sample, on scores (frames, classes) whose last class is the blank:

- State: a tree of prefixes (`_Prefix`: its label, parent and children, and its log probabilities at the
  previous and at the current frame, each the sum of ending in a blank and ending in its label), and the beam
  (`_Beam`): at most `beam_width` prefixes, in a min-heap on their current total so the worst is at hand.
  Invariant: a prefix is in the beam exactly when its current total is not zero probability (-inf).
- A frame's scores are taken through a log-softmax (so logits and log probabilities decode alike, as
  TensorFlow's). Each prefix of the beam carries on: its blank part is its previous total plus the blank's
  score; its label part is its previous label part plus, while its parent is in the beam, the parent's
  previous total (the parent's previous blank part when the label repeats the parent's), times its label's
  score (all in logs, added with log-sum-exp).
- Then each prefix of the beam, best previous total first, grows a child per non-blank class unless that child
  is in the beam already; a child enters when the beam has room or it beats the worst prefix, which leaves the
  beam (its children stop drawing on it). A prefix whose previous total cannot beat the worst grows nothing.
- The paths are the `top_paths` best prefixes of the beam after the sample's last frame, best first; a score
  is the path's total log probability. With `merge_repeated` (tf.compat.v1's default, Keras 2's) a label equal
  to the one before it in the path is dropped from the output (the path was scored as distinct labels).

Ties between equal totals go to the earlier arrival here; TensorFlow's heap orders them its own way, so paths
of exactly equal score may come in another order. Scores are summed in float64 (TensorFlow: the input dtype).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from flexflow_keras.errors import ArgumentError, DataError

_ZERO = -math.inf  # log of zero probability


def _log_add(a: float, b: float) -> float:
    if a == _ZERO:
        return b
    if b == _ZERO:
        return a
    return a + math.log1p(math.exp(b - a)) if a > b else b + math.log1p(math.exp(a - b))


class _Prefix:
    """A labelling prefix: its last label, its parent and children, and its log probabilities (total, ending in a
    blank, ending in its label) at the previous frame (`old_*`) and at the current one."""

    __slots__ = ("label", "parent", "children", "old_total", "old_blank", "old_label", "total", "blank",
                 "by_label")

    def __init__(self, label: int, parent: _Prefix | None):
        self.label, self.parent, self.children = label, parent, {}
        self.old_total = self.old_blank = self.old_label = _ZERO
        self.total = self.blank = self.by_label = _ZERO

    def active(self) -> bool:
        return self.total != _ZERO

    def child(self, label: int) -> _Prefix:
        found = self.children.get(label)
        if found is None:
            found = self.children[label] = _Prefix(label, self)
        return found

    def forget(self) -> None:
        self.total = self.blank = self.by_label = _ZERO

    def labels(self, merge_repeated: bool) -> list[int]:
        out, node, after = [], self, None
        while node.parent is not None:  # the root holds no label
            if not (merge_repeated and node.label == after):
                out.append(node.label)
            after, node = node.label, node.parent
        return out[::-1]


class _Beam:
    """At most `width` prefixes in a min-heap on their total (fixed while they are in it); ties: first in, first
    out of the heap's bottom."""

    def __init__(self, width: int):
        self.width, self._heap, self._arrivals = width, [], 0

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, prefix: _Prefix) -> None:
        heapq.heappush(self._heap, (prefix.total, self._arrivals, prefix))
        self._arrivals += 1

    def admits(self, total: float) -> bool:
        return total > _ZERO and (len(self._heap) < self.width or total > self._heap[0][0])

    def drop_worst(self) -> _Prefix:
        return heapq.heappop(self._heap)[2]

    def take_best_first(self) -> list[_Prefix]:
        entries, self._heap = sorted(self._heap, key=lambda e: (-e[0], e[1])), []
        return [e[2] for e in entries]


def _step(beam: _Beam, row: list[float], blank: int) -> None:
    """One frame of the search; `row` holds the frame's scores, the blank's at `blank` (the last)."""
    peak = max(row)
    top = peak + math.log(sum(math.exp(v - peak) for v in row))  # the log-softmax's offset
    branches = beam.take_best_first()
    for p in branches:
        p.old_total, p.old_blank, p.old_label = p.total, p.blank, p.by_label
    for p in branches:
        parent = p.parent
        if parent is not None:
            if parent.active():
                before = parent.old_blank if p.label == parent.label else parent.old_total
                p.by_label = _log_add(p.by_label, before)
            p.by_label += row[p.label] - top
        p.blank = p.old_total + row[blank] - top
        p.total = _log_add(p.blank, p.by_label)
        beam.push(p)
    for p in branches:
        if not beam.admits(p.old_total):
            continue
        for label in range(blank):
            c = p.child(label)
            if c.active():  # in the beam: carried on above
                continue
            before = p.old_blank if label == p.label else p.old_total
            c.blank, c.by_label = _ZERO, row[label] - top + before
            c.total = c.by_label
            if beam.admits(c.total):
                if len(beam) == beam.width:
                    beam.drop_worst().forget()
                beam.push(c)
            else:
                c.forget()
                c.old_total = c.old_blank = c.old_label = _ZERO


def _search(scores: np.ndarray, beam_width: int, top_paths: int, merge_repeated: bool, who: str, sample: int):
    root = _Prefix(-1, None)
    root.total = root.blank = 0.0
    beam = _Beam(beam_width)
    beam.push(root)
    blank = scores.shape[1] - 1
    for row in scores.tolist():
        _step(beam, row, blank)
    if len(beam) < top_paths:
        raise DataError(f"{who}: sample {sample} ({scores.shape[0]} frames) leaves {len(beam)} paths in the beam, "
                        f"fewer than top_paths={top_paths} (TensorFlow fails there too); ask for fewer top_paths "
                        f"or give the sample more frames.")
    best = beam.take_best_first()[:top_paths]
    return [p.labels(merge_repeated) for p in best], [p.total for p in best]


def _check_counts(who: str, beam_width, top_paths) -> tuple[int, int]:
    for name, value in (("beam_width", beam_width), ("top_paths", top_paths)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ArgumentError(f"{who} expects a positive integer for {name}, received {name}={value!r}.")
    if top_paths > beam_width:
        raise ArgumentError(f"{who} returns at most beam_width paths, received top_paths={top_paths} > "
                            f"beam_width={beam_width}; lower top_paths or widen the beam.")
    return int(beam_width), int(top_paths)


def _scores_and_lengths(who: str, scores, lengths, time_major: bool):
    """(scores (batch, frames, classes) float64, lengths (batch,) int64), checked."""
    from flexflow_keras.ops.graph import KerasTensor

    if isinstance(scores, KerasTensor):
        raise ArgumentError(f"{who} decodes predictions (arrays, e.g. model.predict's), not a model's symbolic "
                            f"tensor; decode after predict().")
    arr = np.asarray(scores, dtype=np.float64)
    layout = "(frames, batch, classes)" if time_major else "(batch, frames, classes)"
    if arr.ndim != 3 or arr.shape[2] < 1:
        raise ArgumentError(f"{who} expects scores of shape {layout}, received shape {arr.shape}.")
    if time_major:
        arr = arr.transpose(1, 0, 2)
    n, frames = arr.shape[:2]
    lens = np.asarray(lengths).reshape(-1)
    if lens.shape != (n,) or lens.dtype.kind not in "iu":
        raise ArgumentError(f"{who} expects one integer length per sample ({n}), received lengths of shape "
                            f"{np.shape(lengths)} and dtype {lens.dtype}.")
    bad = np.flatnonzero((lens < 0) | (lens > frames))
    if bad.size:
        raise DataError(f"{who}: sample {int(bad[0])} has length {int(lens[bad[0]])}, outside [0, {frames}] (the "
                        f"frames of the scores {layout} {np.shape(scores)}); clip the lengths to the frames.")
    return arr, lens.astype(np.int64)


def beam_search(scores, lengths, beam_width: int = 100, top_paths: int = 1, merge_repeated: bool = False,
                who: str = "ctc beam search"):
    """TensorFlow's CTC beam search of batch-major `scores` (batch, frames, classes), the blank being the last
    class: (paths, log_probs) where ``paths[k][i]`` is sample i's k-th best labelling (a list of class ids) and
    ``log_probs[i, k]`` its score (float64)."""
    beam_width, top_paths = _check_counts(who, beam_width, top_paths)
    arr, lens = _scores_and_lengths(who, scores, lengths, time_major=False)
    paths = [[] for _ in range(top_paths)]
    log_probs = np.zeros((arr.shape[0], top_paths))
    for i in range(arr.shape[0]):
        labels, totals = _search(arr[i, :lens[i]], beam_width, top_paths, merge_repeated, who, i)
        for k in range(top_paths):
            paths[k].append(labels[k])
        log_probs[i] = totals
    return paths, log_probs


@dataclass(frozen=True)
class SparseTensorValue:
    """A sparse result as TensorFlow's SparseTensor holds it: `indices` (n, rank) int64 rows of coordinates
    ([row, column] for the decoders' 2-D results), `values` (n,), `dense_shape` (rank,) int64
    (tf.compat.v1.SparseTensorValue's fields)."""

    indices: np.ndarray
    values: np.ndarray
    dense_shape: np.ndarray

    @classmethod
    def from_rows(cls, rows: list[list[int]]) -> SparseTensorValue:
        """Ragged rows of class ids, as TensorFlow stores decoded paths: dense_shape (rows, longest row)."""
        indices = [(i, j) for i, row in enumerate(rows) for j in range(len(row))]
        return cls(np.asarray(indices, np.int64).reshape(-1, 2),
                   np.asarray([v for row in rows for v in row], np.int64),
                   np.asarray([len(rows), max((len(r) for r in rows), default=0)], np.int64))

    @property
    def shape(self) -> tuple:
        """The dense shape, as TensorFlow's ``SparseTensor.shape``."""
        return tuple(int(s) for s in self.dense_shape)

    @property
    def dtype(self):
        return self.values.dtype

    def to_dense(self, default_value=0, shape=None) -> np.ndarray:
        """The dense array, `default_value` where no value is; `shape` (at least dense_shape) pads further."""
        shape = tuple(int(s) for s in (self.dense_shape if shape is None else shape))
        out = np.full(shape, default_value, dtype=self.values.dtype)
        out[tuple(self.indices.T)] = self.values
        return out


def sparse_to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """`tf.sparse.to_dense` of a `SparseTensorValue` (what the CTC decoders here return)."""
    from flexflow_keras.ops.eager_tensor import eager

    if not isinstance(sp_input, SparseTensorValue):
        raise ArgumentError(f"tf.sparse.to_dense converts a sparse value (tf.SparseTensor(...), "
                            f"tf.sparse.from_dense or a CTC decoder's result), received {type(sp_input).__name__}.")
    return eager(sp_input.to_dense(0 if default_value is None else default_value))


def ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1):
    """`tf.nn.ctc_beam_search_decoder` on time-major logits `inputs` (frames, batch, classes), the blank being the
    last class: (a list of `top_paths` `SparseTensorValue`, best first, each (batch, longest path) of class ids;
    the log probabilities (batch, top_paths)). Repeated labels stay in the paths as they were scored.

    Example:
        >>> decoded, log_probs = tf.nn.ctc_beam_search_decoder(logits_tbc, lengths, beam_width=10)
        >>> dense = tf.sparse.to_dense(decoded[0], default_value=-1)
    """
    return _decoder("tf.nn.ctc_beam_search_decoder", inputs, sequence_length, beam_width, top_paths, False)


def ctc_beam_search_decoder_v1(inputs, sequence_length, beam_width=100, top_paths=1, merge_repeated=True):
    """`tf.compat.v1.nn.ctc_beam_search_decoder`: `ctc_beam_search_decoder`, a label equal to the one before it
    in a path dropped from the output unless ``merge_repeated=False``."""
    return _decoder("tf.compat.v1.nn.ctc_beam_search_decoder", inputs, sequence_length, beam_width, top_paths,
                    bool(merge_repeated))


def _decoder(who: str, inputs, sequence_length, beam_width, top_paths, merge_repeated: bool):
    from flexflow_keras.ops.eager_tensor import eager

    beam_width, top_paths = _check_counts(who, beam_width, top_paths)
    arr, lens = _scores_and_lengths(who, inputs, sequence_length, time_major=True)
    paths, log_probs = beam_search(arr, lens, beam_width, top_paths, merge_repeated, who)
    return [SparseTensorValue.from_rows(p) for p in paths], eager(log_probs.astype(_float_dtype(inputs)))


def greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    """`tf.nn.ctc_greedy_decoder` on time-major logits (frames, batch, classes): ([`SparseTensorValue`] of the
    best class per frame, repeats merged unless ``merge_repeated=False``, blanks dropped; the negative sum of
    each frame's best logit (batch, 1)). The blank is `blank_index`, the last class by default."""
    from flexflow_keras.ops.eager_tensor import eager

    who = "tf.nn.ctc_greedy_decoder"
    arr, lens = _scores_and_lengths(who, inputs, sequence_length, time_major=True)
    classes = arr.shape[2]
    blank = classes - 1 if blank_index is None else int(blank_index)
    if not -classes <= blank < classes:
        raise ArgumentError(f"{who} expects blank_index in [{-classes}, {classes}) for {classes} classes, "
                            f"received blank_index={blank_index}.")
    rows, scores = greedy_paths(arr, lens, blank % classes, merge_repeated)
    return [SparseTensorValue.from_rows(rows)], eager(scores.astype(_float_dtype(inputs)))


def greedy_paths(scores: np.ndarray, lengths: np.ndarray, blank: int, merge_repeated: bool):
    """TensorFlow's greedy decoding of batch-major `scores`: (a path per sample, the negative sum of each frame's
    best score (batch, 1))."""
    rows, neg = [], np.zeros((scores.shape[0], 1))
    for i in range(scores.shape[0]):
        frames = scores[i, :int(lengths[i])]
        best = frames.argmax(-1)
        rows.append([int(c) for j, c in enumerate(best)
                     if c != blank and not (merge_repeated and j > 0 and c == best[j - 1])])
        neg[i, 0] = -frames.max(-1).sum() if len(frames) else 0.0
    return rows, neg


def _float_dtype(x):
    dtype = getattr(x, "dtype", None)
    return np.float64 if dtype is not None and np.dtype(dtype) == np.float64 else np.float32


__all__ = ["SparseTensorValue", "beam_search", "ctc_beam_search_decoder", "ctc_beam_search_decoder_v1",
           "greedy_decoder", "sparse_to_dense"]
