"""MultiHeadAttention (Keras 3 semantics and weight layout).

The four projections are sublayers named ``query``, ``key``, ``value`` and ``attention_output`` whose
kernels have Keras 3's EinsumDense shapes ((dim, heads, key_dim), ..., (heads, value_dim, out)), so
weights copy to and from tf.keras as they are; each runs as one `ProjectionOp` (Dense kernels on 2-D
views). The attention itself composes ops with backward: transposes, batched matmuls, a masked softmax
(``where`` before and after it, as Keras' Softmax with a mask) and dropout on the scores.

By default attention runs over all axes between the batch and the features; for inputs of rank > 3 those
axes are flattened into one sequence and restored afterwards. Other `attention_axes` run through
`layers.attention_axes`.

A subclass that overrides Keras' `_compute_attention` (keras.io's small-data ViT learns the softmax
temperature there) gets it called on the projected (B, T, N, H) tensors as Keras 3 calls it, with Keras'
private names it reads (`_key_dim`, `_dot_product_equation`, `_combine_equation`, `_masked_softmax`,
`_dropout_layer`, ...); an override with Keras 3.0's shorter signature gets the arguments it takes.
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from flexflow_keras import constraints, initializers, ops, regularizers
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.attention_axes import attend_over_axes, normalize_axes
from flexflow_keras.layers.base import Layer
from flexflow_keras.ops import functional as F
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.einsum_dense import ProjectionOp
from flexflow_keras.utils import rng

_NEG = -1e9  # Keras' large negative number for masked float32 scores


class _Projection(Layer):
    """One EinsumDense projection of MultiHeadAttention: contracts the last `n_contract` input dims."""

    _float_math = True

    def __init__(self, n_contract, out_dims, use_bias, owner, **kwargs):
        super().__init__(**kwargs)
        self.n_contract, self.out_dims, self.use_bias = int(n_contract), tuple(out_dims), bool(use_bias)
        object.__setattr__(self, "_owner", owner)  # not tracked as a sublayer (the owner holds this one)
        self.kernel = self.bias = None

    def build(self, input_shape):
        in_dims = tuple(input_shape[-self.n_contract:])
        if any(d is None for d in in_dims):
            raise ShapeError(f"{_args.who(self._owner)} needs known feature sizes, received input shape "
                             f"{tuple(input_shape)}.")
        o = self._owner
        self.kernel = self.add_weight(name="kernel", shape=in_dims + self.out_dims, initializer=o.kernel_initializer,
                                      regularizer=o.kernel_regularizer, constraint=o.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight(name="bias", shape=self.out_dims, initializer=o.bias_initializer,
                                        regularizer=o.bias_regularizer, constraint=o.bias_constraint)

    def call(self, inputs):
        weights = [self.kernel] + ([self.bias] if self.bias is not None else [])
        return apply_op(ProjectionOp(self.n_contract), [F._tensor(inputs, F._symbolic(inputs))], weights)


class QueryValueCall:
    """``layer(query, value[, key], ...)`` for the attention layers: builds from the three shapes, and
    turns array arguments into the layer's float dtype."""

    def __call__(self, query, value=None, key=None, **kwargs):
        if value is None:
            raise TypeError(f"{_args.who(self)} must be called as layer(query, value[, key]); received no value.")
        if not self.built:
            self.build(tuple(query.shape), tuple(value.shape), None if key is None else tuple(key.shape))
        args = (query, value) if key is None else (query, value, key)
        return super().__call__(*args, **kwargs)

    def _as_float(self, x):
        if isinstance(x, np.ndarray) or np.isscalar(x) or isinstance(x, list):
            return np.asarray(x, dtype=self._dtype)
        return x


class MultiHeadAttention(QueryValueCall, Layer):
    """Multi-head scaled dot-product attention (Vaswani et al.), as Keras 3's layer.

    Args:
        num_heads: number of attention heads.
        key_dim: size of each head for query and key.
        value_dim: size of each head for value (default: key_dim).
        dropout: dropout rate on the attention probabilities (training only).
        use_bias: whether the projections add biases.
        output_shape: the output's feature shape (an int or a tuple; default: the query's last dim).
        attention_axes: the input axes attention runs over (None: every axis between the batch and the
            features); the other positional axes act as batch axes (`layers.attention_axes`). With
            non-default axes, masks come as ``attention_mask`` only.
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, kernel_constraint,
            bias_constraint: as for Dense.
        seed: seed of the dropout.

    Call arguments: ``query``, ``value``, ``key`` (default: value), ``attention_mask`` (broadcastable to
    (batch, T, S); True/nonzero = attend), ``query_mask`` / ``value_mask`` / ``key_mask`` (padding masks
    of shape (batch, T) / (batch, S)), ``return_attention_scores``, ``training``, ``use_causal_mask``.

    Example:
        >>> x = Input((16, 32))
        >>> y = MultiHeadAttention(num_heads=4, key_dim=8)(x, x)
    """

    # Keras 3 saves its projections under its properties of these names: weights_io.walk
    _saved_sublayers = ("query_dense", "key_dense", "value_dense", "output_dense")

    @property
    def query_dense(self):
        """The query projection (an EinsumDense in Keras; None until built)."""
        return self._query_dense

    @property
    def key_dense(self):
        """The key projection (None until built)."""
        return self._key_dense

    @property
    def value_dense(self):
        """The value projection (None until built)."""
        return self._value_dense

    @property
    def output_dense(self):
        """The output projection (None until built)."""
        return self._output_dense


    _float_math = True

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True, output_shape=None,
                 attention_axes=None, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, seed=None, flash_attention=None, use_gate=False,
                 sliding_window=None, **kwargs):
        super().__init__(**kwargs)
        if activity_regularizer is not None:  # Keras 3 hands it to each query/key/value/output projection
            raise ValueError(f"MultiHeadAttention '{self.name}': activity_regularizer is not supported (Keras 3 applies "
                             f"it to each of the layer's query, key, value and output projections); received "
                             f"activity_regularizer={activity_regularizer!r}. Add the penalty with "
                             f"self.add_loss(...) in a layer of your own instead.")
        self.num_heads = _args.positive_int(self, "num_heads", num_heads)
        self.key_dim = _args.positive_int(self, "key_dim", key_dim)
        self.value_dim = _args.positive_int(self, "value_dim", value_dim) if value_dim else self.key_dim
        self.dropout = _args.rate(self, "dropout", dropout)
        if self.dropout >= 1.0:
            raise ValueError(f"{_args.who(self)} expects dropout in [0, 1), received dropout={dropout!r}.")
        self.use_bias = bool(use_bias)
        if output_shape is not None and not isinstance(output_shape, (int, list, tuple)):
            raise ValueError(f"{_args.who(self)} expects output_shape to be an int or a tuple, received "
                             f"output_shape={output_shape!r}.")
        self._output_shape = (output_shape,) if isinstance(output_shape, int) else (
            tuple(output_shape) if output_shape else None)
        if isinstance(attention_axes, int):
            attention_axes = (attention_axes,)
        self.attention_axes = tuple(attention_axes) if attention_axes is not None else None
        if use_gate:
            raise ValueError(f"{_args.who(self)}: use_gate=True is not supported; use use_gate=False.")
        if sliding_window is not None:
            raise ValueError(f"{_args.who(self)}: sliding_window is not supported; pass an attention_mask "
                             f"instead.")
        self.flash_attention = flash_attention  # a kernel choice in Keras; the maths here is the same
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.seed = seed
        # Keras makes the dropout's SeedGenerator (and draws its seed from Python's random) in build
        self._seed = int(seed) if seed is not None else rng.default_seed(python_draw=False)
        self._query_dense = self._key_dense = self._value_dense = self._output_dense = None
        self._axes = None
        # Keras' private names, which subclasses overriding `_compute_attention` read (keras.io's LSA ViT)
        self._num_heads, self._key_dim, self._value_dim = self.num_heads, self.key_dim, self.value_dim
        self._dropout, self._use_bias, self._attention_axes = self.dropout, self.use_bias, self.attention_axes
        self._inverse_sqrt_key_dim = 1.0 / math.sqrt(float(self.key_dim))

    # --- build ----------------------------------------------------------------------------------------------
    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        if tuple(value_shape[1:-1]) != tuple(key_shape[1:-1]):
            raise ShapeError(f"{_args.who(self)}: value and key must agree on every dim but the last; received "
                             f"value shape {tuple(value_shape)} and key shape {tuple(key_shape)}.")
        if len(query_shape) < 3 or len(value_shape) != len(query_shape):
            raise ShapeError(f"{_args.who(self)} expects query and value of the same rank >= 3 (batch, "
                             f"positions..., features); received {tuple(query_shape)} and {tuple(value_shape)}.")
        self._axes = normalize_axes(self, self.attention_axes, len(query_shape))  # None: Keras' default
        h = self.num_heads
        out = self._output_shape or (query_shape[-1],)
        _keras_build_draws(self, 4)
        self._query_dense = _Projection(1, (h, self.key_dim), self.use_bias, self, name="query")
        self._key_dense = _Projection(1, (h, self.key_dim), self.use_bias, self, name="key")
        self._value_dense = _Projection(1, (h, self.value_dim), self.use_bias, self, name="value")
        self._output_dense = _Projection(2, out, self.use_bias, self, name="attention_output")
        self._query_dense.build(query_shape)
        self._key_dense.build(key_shape)
        self._value_dense.build(value_shape)
        self._output_dense.build(tuple(query_shape[:-1]) + (h, self.value_dim))
        # Keras' `_build_attention` for projections (B, T, N, H): what an overriding `_compute_attention` uses
        self._dot_product_equation, self._combine_equation = "aecd,abcd->acbe", "acbe,aecd->abcd"
        if self._overrides_attention():
            from flexflow_keras.layers.core import Dropout

            self._dropout_layer = Dropout(self.dropout, seed=self._seed, name="attention_dropout")


    # --- call -----------------------------------------------------------------------------------------------
    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None, attention_mask=None,
             return_attention_scores=False, training=None, use_causal_mask=False):
        # padding masks carried by the tensors (Embedding(mask_zero=True), Masking), as Keras 3 reads them
        query_mask = _keras_mask(query) if query_mask is None else query_mask
        value_mask = _keras_mask(value) if value_mask is None else value_mask
        key_mask = _keras_mask(key) if key_mask is None and key is not None else key_mask
        query, value = self._as_float(query), self._as_float(value)
        key = value if key is None else self._as_float(key)
        if self._axes is not None:
            return self._call_over_axes(query, value, key, query_mask, value_mask, key_mask, attention_mask,
                                        return_attention_scores, training, use_causal_mask)
        q_pos, s_pos = tuple(query.shape[1:-1]), tuple(value.shape[1:-1])
        t, s = _size(q_pos), _size(s_pos)
        h = self.num_heads
        q = _flatten_positions(self._query_dense(query), t)  # (B, T, H, K)
        k = _flatten_positions(self._key_dense(key), s)  # (B, S, H, K)
        v = _flatten_positions(self._value_dense(value), s)  # (B, S, H, Vd)
        mask = self._mask(query, q_pos, s_pos, t, s, query_mask, value_mask, key_mask, attention_mask,
                          use_causal_mask, value)
        if self._overrides_attention():
            ctx, probs = self._call_override(q, k, v, mask, training, return_attention_scores, q_pos, s_pos)
        else:
            ctx, probs = scaled_attention(q, k, v, mask, self._inverse_sqrt_key_dim, self.dropout, self._seed,
                                          training, fused=_fused(self.dropout, return_attention_scores, q_pos))
        if len(q_pos) > 1:
            ctx = ops.reshape(ctx, (-1,) + q_pos + (h, self.value_dim))
        output = self._output_dense(ctx)
        if query_mask is not None and F._symbolic(output):
            output._keras_mask = query_mask  # the output keeps the query's padding mask, as in Keras
        if not return_attention_scores:
            return output
        if len(q_pos) > 1 or len(s_pos) > 1:
            probs = ops.reshape(probs, (-1, h) + q_pos + s_pos)
        return output, probs

    # --- Keras' customisation point ---------------------------------------------------------------------
    def _overrides_attention(self) -> bool:
        return type(self)._compute_attention is not MultiHeadAttention._compute_attention

    def _compute_attention(self, query, key, value, attention_mask=None, training=None,
                           return_attention_scores=False, use_causal_mask=False):
        """Keras 3's hook: attention of projected (B, T, N, H) queries over (B, S, N, H) keys and values under
        a bool `attention_mask` (B, T, S); returns the (B, T, N, Hv) context and the (B, N, T, S) scores. A
        subclass may override it (Keras' `_masked_softmax`, `_dropout_layer` and einsum equations are here)."""
        mask = None if attention_mask is None else ops.expand_dims(attention_mask, 1)
        return scaled_attention(query, key, value, mask, self._inverse_sqrt_key_dim, self.dropout, self._seed,
                                training, fused=_fused(self.dropout, return_attention_scores, (None,)))

    def _masked_softmax(self, attention_scores, attention_mask=None):
        """Keras': the softmax over the key axis, masked positions at Keras' large negative number before
        it and 0 after it (`attention_mask` (B, T, S) gets the heads axis)."""
        if attention_mask is None:
            return ops.softmax(attention_scores, axis=-1)
        mask = _flag(attention_mask)
        for _ in range(len(attention_scores.shape) - len(mask.shape)):
            mask = ops.expand_dims(mask, -3)
        probs = ops.softmax(ops.where(mask, attention_scores, np.float32(_NEG)), axis=-1)
        return ops.where(mask, probs, np.float32(0.0))

    def _call_override(self, q, k, v, mask, training, return_scores, q_pos, s_pos):
        """A subclass's `_compute_attention`, called as Keras 3 calls it (the mask (B, T, S)); an override
        written for Keras 3.0's signature, without `return_attention_scores`, gets the arguments it takes."""
        if len(q_pos) > 1 or len(s_pos) > 1:
            raise ValueError(f"{_args.who(self)}: an overriding _compute_attention is supported over one "
                             f"sequence axis; received positions {q_pos} and {s_pos}.")
        mask = None if mask is None else mask[:, 0]
        params = inspect.signature(self._compute_attention).parameters
        if "return_attention_scores" in params or any(p.kind is p.VAR_POSITIONAL for p in params.values()):
            return self._compute_attention(q, k, v, mask, training, return_scores)
        return self._compute_attention(q, k, v, mask, training)

    def _call_over_axes(self, query, value, key, query_mask, value_mask, key_mask, attention_mask, return_scores,
                        training, causal):
        """Attention over non-default `attention_axes` (`layers.attention_axes`)."""
        if causal or any(m is not None for m in (query_mask, value_mask, key_mask)):
            raise ValueError(f"{_args.who(self)}: with attention_axes={self.attention_axes}, padding masks "
                             f"(query_mask / value_mask / key_mask, or a mask from Embedding(mask_zero=True) or "
                             f"Masking) and use_causal_mask are not supported (they assume one sequence axis); "
                             f"pass an attention_mask broadcastable to the attention scores instead.")
        ctx, probs = attend_over_axes(self, self._query_dense(query), self._key_dense(key), self._value_dense(value),
                                      self._axes, attention_mask, training, return_scores)
        output = self._output_dense(ctx)
        return (output, probs) if return_scores else output

    def _mask(self, query, q_pos, s_pos, t, s, query_mask, value_mask, key_mask, attention_mask, causal,
              value=None):
        """The boolean attention mask broadcastable to (B, 1, T, S), or None."""
        return combined_mask(self, query, q_pos, s_pos, t, s, query_mask, value_mask, key_mask, attention_mask,
                             causal, value=value)

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout, "use_bias": self.use_bias,
                "output_shape": self._output_shape, "attention_axes": self.attention_axes,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint), "seed": self.seed,
                "activity_regularizer": None, "use_gate": False, "sliding_window": None}  # Keras 3's keys


def _keras_build_draws(layer, projections: int) -> None:
    """The Python `random` draws Keras 3 makes building an attention layer (`utils/rng.default_seed`): each
    projection clones the kernel and bias initializers, and a dropout rate above 0 with no seed makes a
    SeedGenerator."""
    for _ in range(projections):
        initializers.clone_draws(layer.kernel_initializer, layer.bias_initializer)
    if layer.seed is None and layer.dropout > 0:
        rng.keras_draw()


def scaled_attention(q, k, v, mask, scale: float, dropout: float, seed: int, training, fused: bool = False):
    """Scaled dot-product attention of (B, T, H, K) queries over (B, S, H, K) keys and (B, S, H, V) values
    with an optional bool mask broadcastable to (B, H, T, S) (masked scores get Keras' large negative
    number before the softmax and 0 after it) and dropout on the probabilities. Returns the context
    (B, T, H, V) and the probabilities (B, H, T, S).

    `fused` is Keras 3's `ops.dot_product_attention` path, which its attention layers take when there is no
    dropout, no returned scores and one attention axis: masked probabilities are not zeroed after the
    softmax, so a query whose every key is masked (a padding position's row) attends uniformly, where the
    other path gives it zero weights."""
    q = ops.multiply(q, scale)
    scores = ops.matmul(ops.transpose(q, (0, 2, 1, 3)), ops.transpose(k, (0, 2, 3, 1)))  # (B, H, T, S)
    if mask is not None:
        scores = ops.where(mask, scores, np.float32(_NEG))
    probs = ops.softmax(scores, axis=-1)
    if mask is not None and not fused:
        probs = ops.where(mask, probs, np.float32(0.0))
    dropped = probs
    if dropout > 0.0:
        dropped = F.dropout(probs, dropout, seed=seed, training=training)
    ctx = ops.transpose(ops.matmul(dropped, ops.transpose(v, (0, 2, 1, 3))), (0, 2, 1, 3))  # (B, T, H, V)
    return ctx, probs


def _fused(dropout: float, return_attention_scores: bool, q_pos: tuple) -> bool:
    """Whether Keras 3's attention runs `ops.dot_product_attention` (see `scaled_attention`)."""
    return dropout == 0.0 and not return_attention_scores and len(q_pos) == 1


def combined_mask(layer, query, q_pos, s_pos, t, s, query_mask, value_mask, key_mask, attention_mask, causal,
                  extra=None, value=None):
    """`layer`'s boolean attention mask broadcastable to (B, 1, T, S), or None: the padding masks, the
    causal mask, `attention_mask` and `extra` (a (1, T, S) bool array) combined with logical and."""
    terms = [] if extra is None else [F.constant(extra) if F._symbolic(query) else extra]
    if query_mask is not None:
        qm = _flag(query_mask)
        terms.append(ops.reshape(qm, (-1, t, 1)) if t is not None else ops.expand_dims(qm, -1))
    for m in (value_mask, key_mask):
        if m is not None:
            terms.append(ops.reshape(_flag(m), (-1, 1, s)) if s is not None else ops.expand_dims(_flag(m), 1))
    if causal and (t is None or s is None):  # open lengths: i >= j over ranges of the query's and value's
        n_q, n_s = ops.shape(query)[1], ops.shape(query if value is None else value)[1]
        rows, cols = ops.reshape(ops.arange(0, n_q), (n_q, 1)), ops.reshape(ops.arange(0, n_s), (1, n_s))
        terms.append(ops.reshape(ops.greater_equal(rows, cols), (1, n_q, n_s)))
    elif causal:
        terms.append(F.constant(np.tril(np.ones((t, s), bool)).reshape(1, t, s))
                     if F._symbolic(query) else np.tril(np.ones((t, s), bool)).reshape(1, t, s))
    if attention_mask is not None:
        am = _flag(attention_mask)
        if len(q_pos) > 1 or len(s_pos) > 1 or len(am.shape) != 3:
            if tuple(am.shape[1:]) != q_pos + s_pos:
                raise ShapeError(f"{_args.who(layer)} expects attention_mask of shape (batch,) + {q_pos + s_pos}"
                                 f", received {tuple(am.shape)}.")
            am = ops.reshape(am, (-1, t, s))
        terms.append(am)
    if not terms:
        return None
    mask = terms[0]
    for m in terms[1:]:
        mask = ops.logical_and(mask, m)
    shape = tuple(mask.shape)
    if None in shape[1:]:
        return ops.expand_dims(mask, 1)
    return ops.reshape(mask, ((-1,) if shape[0] is None or shape[0] != 1 else (1,)) + (1,) + shape[1:])


def _size(dims) -> int | None:
    """The positions attended over; None for one axis of open length (Input(shape=(None, d)): the graph is
    recorded again at each data length, models/variable_dims.py)."""
    if len(dims) == 1 and dims[0] is None:
        return None
    if any(d is None for d in dims):
        raise ShapeError(f"MultiHeadAttention needs known sizes when it attends over several axes, received "
                         f"positions {dims}.")
    return math.prod(dims)


def _flatten_positions(x, n: int):
    """(B, positions..., H, D) as (B, n, H, D)."""
    if len(x.shape) == 4:
        return x
    return ops.reshape(x, (-1, n) + tuple(x.shape[-2:]))


def _keras_mask(t):
    """The padding mask a tensor carries (`_keras_mask`), or None."""
    return getattr(t, "_keras_mask", None)


def _flag(m):
    """A mask as bool (nonzero: attend), as Keras casts masks."""
    if str(getattr(m, "dtype", "")) == "bool":
        return m
    if not F._symbolic(m):
        return np.asarray(m) != 0
    return ops.not_equal(m, np.zeros((), m.dtype))

