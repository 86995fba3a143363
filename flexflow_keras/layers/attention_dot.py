"""`Attention` (Luong-style dot-product) and `AdditiveAttention` (Bahdanau-style), Keras 3 semantics.

Both take ``[query, value]`` or ``[query, value, key]`` (batch, T, dim) / (batch, S, dim) and return
(batch, T, value dim). Scores (batch, T, S): ``query @ key.T`` (times the learned `scale` with
``use_scale``) or, with ``score_mode="concat"`` / AdditiveAttention, ``sum(scale * tanh(q + k))`` over the
features. Masked keys (the value's mask, ``use_causal_mask``) get ``scores - 1e9`` before the softmax, as
Keras does; dropout (training only) acts on the attention distribution; masked query steps output zeros,
and the output carries the query's mask. Composed from ops with backward.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras import ops
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.ops import functional as F
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.utils import rng


def _mask_list(layer, inputs, mask):
    if mask is None:
        mask = [getattr(t, "_keras_mask", None) if isinstance(t, KerasTensor) else None for t in inputs]
    if not isinstance(mask, (list, tuple)) or not 2 <= len(mask) <= 3:
        raise ValueError(f"{_args.who(layer)} expects mask to be a list [query_mask, value_mask(, key_mask)], "
                         f"received mask={mask!r}.")
    return list(mask)


def _bool(m):
    if str(getattr(m, "dtype", "")) == "bool":
        return m
    if not F._symbolic(m):
        return np.asarray(m) != 0
    return ops.not_equal(m, np.zeros((), m.dtype))


class Attention(Layer):
    """Dot-product attention layer (Keras 3's `Attention`).

    Args:
        use_scale: learn a scalar `scale` multiplying the scores (default False).
        score_mode: "dot" (``query @ key.T``) or "concat" (``concat_score_weight * sum(tanh(scale *
            (q + k)))``).
        dropout: rate of dropout on the attention distribution (training only).
        seed: seed of the dropout.

    Call arguments: ``inputs`` ([query, value] or [query, value, key]), ``mask`` ([query_mask,
    value_mask]; default: the masks the inputs carry), ``return_attention_scores``, ``training``,
    ``use_causal_mask``.
    """

    _float_math = True
    _score_modes = ("dot", "concat")

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.use_scale = bool(use_scale)
        if score_mode not in self._score_modes:
            raise ValueError(f"{_args.who(self)} expects score_mode in {list(self._score_modes)}, received "
                             f"score_mode={score_mode!r}.")
        self.score_mode = score_mode
        self.dropout = _args.rate(self, "dropout", dropout)
        if self.dropout >= 1.0:
            raise ValueError(f"{_args.who(self)} expects dropout in [0, 1), received dropout={dropout!r}.")
        self.seed = seed
        self._seed = int(seed) if seed is not None else rng.default_seed(self.dropout > 0)
        self.scale = self.concat_score_weight = None

    def _check_inputs(self, inputs):
        if (not isinstance(inputs, (list, tuple)) or not 2 <= len(inputs) <= 3
                or any(isinstance(t, (int, type(None))) for t in inputs)):  # one shape, not a list of them
            raise ValueError(f"{_args.who(self)} must be called on a list [query, value] or [query, value, key], "
                             f"received {type(inputs).__name__}"
                             f"{'' if not isinstance(inputs, (list, tuple)) else f' of length {len(inputs)}'}.")
        return list(inputs)

    def build(self, input_shape):
        shapes = [tuple(s) for s in self._check_inputs(input_shape)]
        q, v = shapes[0], shapes[1]
        k = shapes[2] if len(shapes) > 2 else v
        if len(q) != 3 or len(v) != 3 or len(k) != 3 or q[-1] != k[-1] or v[1] != k[1]:
            raise ShapeError(f"{_args.who(self)} expects query (batch, T, dim), value (batch, S, value_dim) and key "
                             f"(batch, S, dim), received shapes {shapes}.")
        self._make_weights(q[-1])

    def _make_weights(self, dim: int) -> None:
        if self.use_scale:
            self.scale = self.add_weight(name="scale", shape=(), initializer="ones")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight(name="concat_score_weight", shape=(), initializer="ones")

    def _scores(self, query, key):
        if self.score_mode == "dot":
            scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))
            return ops.multiply(scores, self.scale) if self.scale is not None else scores
        s = ops.add(ops.expand_dims(query, -2), ops.expand_dims(key, -3))  # (B, T, S, dim)
        if self.scale is not None:
            s = ops.multiply(s, self.scale)
        return ops.multiply(ops.sum(ops.tanh(s), axis=-1), self.concat_score_weight)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False, use_causal_mask=False):
        inputs = self._check_inputs(inputs)
        mask = _mask_list(self, inputs, mask)
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        scores = self._scores(q, k)  # (B, T, S)
        keep = None
        if mask[1] is not None:
            keep = ops.expand_dims(_bool(mask[1]), -2)  # (B, 1, S)
        if use_causal_mask:
            t, s = q.shape[1], k.shape[1]
            causal = np.tril(np.ones((t, s), bool))[None]
            causal = F.constant(causal) if F._symbolic(scores) else causal
            keep = causal if keep is None else ops.logical_and(keep, causal)
        if keep is not None:
            scores = ops.where(keep, scores, ops.subtract(scores, np.float32(1e9)))
        weights = ops.softmax(scores, axis=-1)
        dropped = weights
        if self.dropout > 0.0:
            dropped = F.dropout(weights, self.dropout, seed=self._seed, training=training)
        out = ops.matmul(dropped, v)
        if mask[0] is not None:
            out = ops.where(ops.expand_dims(_bool(mask[0]), -1), out, np.float32(0.0))
        return (out, weights) if return_attention_scores else out

    def compute_mask(self, inputs, mask=None):
        """The query's mask (Keras 3)."""
        if mask is None or not isinstance(mask, (list, tuple)) or mask[0] is None:
            return None
        return mask[0]

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale, "score_mode": self.score_mode,
                "dropout": self.dropout, "seed": self.seed}


class AdditiveAttention(Attention):
    """Additive (Bahdanau-style) attention (Keras 3's `AdditiveAttention`): scores
    ``sum(scale * tanh(query + key), axis=-1)`` with a learned per-feature `scale`.

    Args:
        use_scale: learn the (dim,) `scale` (default True; else it is 1).
        dropout: rate of dropout on the attention distribution (training only).
        seed: seed of the dropout.
    """

    _score_modes = ("concat",)

    def __init__(self, use_scale=True, dropout=0.0, **kwargs):
        kwargs.pop("score_mode", None)
        super().__init__(use_scale=use_scale, score_mode="concat", dropout=dropout, **kwargs)

    def _make_weights(self, dim: int) -> None:
        if self.use_scale:
            self.scale = self.add_weight(name="scale", shape=(dim,), initializer="glorot_uniform")

    def _scores(self, query, key):
        s = ops.tanh(ops.add(ops.expand_dims(query, -2), ops.expand_dims(key, -3)))  # (B, T, S, dim)
        if self.scale is not None:
            s = ops.multiply(s, self.scale)
        return ops.sum(s, axis=-1)

    def get_config(self):
        config = super().get_config()
        config.pop("score_mode")
        return config
