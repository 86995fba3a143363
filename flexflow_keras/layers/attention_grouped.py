"""GroupedQueryAttention (Keras 3's ``keras.layers.GroupQueryAttention``; Ainslie et al., 2023).

Queries get `num_query_heads` heads, keys and values `num_key_value_heads`; each key/value head serves
``num_query_heads // num_key_value_heads`` query heads (repeated along the head axis), so one key/value
head is multi-query attention and as many as the query heads is multi-head attention. The projections are
`MultiHeadAttention`'s EinsumDense sublayers with Keras 3's names and shapes (``query`` (dim, Hq, D),
``key``/``value`` (dim, Hkv, D), ``attention_output`` (Hq, D, dim); with ``use_gate`` a sigmoid ``gate``
projection of the query multiplies the context), built in Keras' order so weights copy as they are.
Masks are `MultiHeadAttention`'s, plus ``sliding_window`` (a symmetric band of width ``2w - 1``).
"""

from __future__ import annotations

import math

import numpy as np

from flexflow_keras import constraints, initializers, ops, regularizers
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.attention import (
    QueryValueCall,
    _fused,
    _keras_build_draws,
    _keras_mask,
    _Projection,
    combined_mask,
    scaled_attention,
)
from flexflow_keras.layers.base import Layer
from flexflow_keras.ops import functional as F
from flexflow_keras.utils import rng


class GroupedQueryAttention(QueryValueCall, Layer):
    """Grouped-query attention over sequences (batch, T, dim) and (batch, S, dim).

    Args:
        head_dim: size of each head.
        num_query_heads: number of query heads.
        num_key_value_heads: number of key/value heads (it must divide num_query_heads).
        dropout: dropout rate on the attention probabilities (training only).
        use_bias: whether the projections add biases.
        sliding_window: None, or a positive int: each query attends to keys within sliding_window - 1.
        flash_attention: accepted (a kernel choice in Keras; the maths is the same).
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, kernel_constraint,
            bias_constraint: as for Dense.
        use_gate: gate the context with a sigmoid projection of the query.
        seed: seed of the dropout.

    Call arguments: ``query``, ``value``, ``key`` (default: value), ``query_mask``, ``value_mask``,
    ``key_mask``, ``attention_mask`` (True/nonzero = attend), ``return_attention_scores`` (scores of shape
    (batch, num_query_heads, T, S)), ``training``, ``use_causal_mask``.
    """

    # Keras 3 saves its projections under these (private) attribute names: weights_io.walk
    _saved_sublayers = ("_query_dense", "_key_dense", "_gate_dense", "_value_dense", "_output_dense")


    _float_math = True

    def __init__(self, head_dim, num_query_heads, num_key_value_heads, dropout=0.0, use_bias=True,
                 sliding_window=None, flash_attention=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None, **kwargs):
        super().__init__(**kwargs)
        if activity_regularizer is not None:  # Keras 3 hands it to each query/key/value/output projection
            raise ValueError(f"GroupedQueryAttention '{self.name}': activity_regularizer is not supported (Keras 3 applies "
                             f"it to each of the layer's query, key, value and output projections); received "
                             f"activity_regularizer={activity_regularizer!r}. Add the penalty with "
                             f"self.add_loss(...) in a layer of your own instead.")
        self.head_dim = _args.positive_int(self, "head_dim", head_dim)
        self.num_query_heads = _args.positive_int(self, "num_query_heads", num_query_heads)
        self.num_key_value_heads = _args.positive_int(self, "num_key_value_heads", num_key_value_heads)
        if self.num_query_heads % self.num_key_value_heads:
            raise ValueError(f"{_args.who(self)}: num_query_heads ({self.num_query_heads}) must be divisible by "
                             f"num_key_value_heads ({self.num_key_value_heads}).")
        self.num_repeats = self.num_query_heads // self.num_key_value_heads
        self.dropout = _args.rate(self, "dropout", dropout)
        if self.dropout >= 1.0:
            raise ValueError(f"{_args.who(self)} expects dropout in [0, 1), received dropout={dropout!r}.")
        if sliding_window is not None and (isinstance(sliding_window, bool) or not isinstance(sliding_window, int)
                                           or sliding_window <= 0):
            raise ValueError(f"{_args.who(self)}: sliding_window must be None or a positive int, received "
                             f"{sliding_window!r}.")
        self.sliding_window = sliding_window
        self.use_bias, self.use_gate = bool(use_bias), bool(use_gate)
        self.flash_attention = flash_attention
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.seed = seed
        # drawn from Python's random in build, as Keras (MultiHeadAttention's `_keras_build_draws`)
        self._seed = int(seed) if seed is not None else rng.default_seed(python_draw=False)
        self._query_dense = self._key_dense = self._gate_dense = self._value_dense = self._output_dense = None

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        for what, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            if len(shape) != 3:
                raise ShapeError(f"{_args.who(self)} expects a {what} of shape (batch, sequence, features), "
                                 f"received {tuple(shape)}.")
        if tuple(value_shape[1:-1]) != tuple(key_shape[1:-1]):
            raise ShapeError(f"{_args.who(self)}: value and key must agree on every dim but the last; received "
                             f"value shape {tuple(value_shape)} and key shape {tuple(key_shape)}.")
        hq, hkv, d = self.num_query_heads, self.num_key_value_heads, self.head_dim
        _keras_build_draws(self, 5 if self.use_gate else 4)
        self._query_dense = _Projection(1, (hq, d), self.use_bias, self, name="query")
        self._query_dense.build(query_shape)
        self._key_dense = _Projection(1, (hkv, d), self.use_bias, self, name="key")
        self._key_dense.build(key_shape)
        if self.use_gate:
            self._gate_dense = _Projection(1, (hq, d), self.use_bias, self, name="gate")
            self._gate_dense.build(query_shape)
        self._value_dense = _Projection(1, (hkv, d), self.use_bias, self, name="value")
        self._value_dense.build(value_shape)
        self._output_dense = _Projection(2, (query_shape[-1],), self.use_bias, self, name="attention_output")
        self._output_dense.build((None, None, hq, d))

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None, attention_mask=None,
             return_attention_scores=False, training=None, use_causal_mask=False):
        query_mask = _keras_mask(query) if query_mask is None else query_mask
        value_mask = _keras_mask(value) if value_mask is None else value_mask
        key_mask = _keras_mask(key) if key_mask is None and key is not None else key_mask
        query, value = self._as_float(query), self._as_float(value)
        key = value if key is None else self._as_float(key)
        t, s = query.shape[1], value.shape[1]
        if t is None or s is None:
            raise ShapeError(f"{_args.who(self)} needs known sequence lengths, received query {tuple(query.shape)} "
                             f"and value {tuple(value.shape)}.")
        band = None
        if self.sliding_window is not None:
            rows, cols = np.arange(t).reshape(t, 1), np.arange(s).reshape(1, s)
            band = (np.abs(rows - cols) < self.sliding_window).reshape(1, t, s)
        mask = combined_mask(self, query, (t,), (s,), t, s, query_mask, value_mask, key_mask, attention_mask,
                             use_causal_mask, extra=band)
        gate = ops.sigmoid(self._gate_dense(query)) if self.use_gate else None
        q = self._query_dense(query)  # (B, T, Hq, D)
        k = ops.repeat(self._key_dense(key), self.num_repeats, axis=2)  # (B, S, Hq, D)
        v = ops.repeat(self._value_dense(value), self.num_repeats, axis=2)
        ctx, probs = scaled_attention(q, k, v, mask, 1.0 / math.sqrt(float(self.head_dim)), self.dropout,
                                      self._seed, training, fused=_fused(self.dropout, return_attention_scores, (t,)))
        output = self._output_dense(ctx if gate is None else ops.multiply(ctx, gate))
        if query_mask is not None and F._symbolic(output):
            output._keras_mask = query_mask
        return (output, probs) if return_attention_scores else output

    def get_config(self):
        return {**super().get_config(), "head_dim": self.head_dim, "num_query_heads": self.num_query_heads,
                "num_key_value_heads": self.num_key_value_heads, "use_bias": self.use_bias,
                "use_gate": self.use_gate, "sliding_window": self.sliding_window, "dropout": self.dropout,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": None,
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint), "seed": self.seed}


GroupQueryAttention = GroupedQueryAttention  # the name Keras 3 exports
