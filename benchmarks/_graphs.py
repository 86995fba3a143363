"""Model graphs for the simulated search benchmark (never trained, so they may be large).

Each builder takes a Keras-like module `k` (flexflow_keras) and returns
``(model, label_shape, label_dtype, loss_name)``, the label shape with None for the batch. Their size
arguments default to the published models; the tests pass small ones. `training_graph` turns a builder's
result into what the search reads: the training op graph (the model and its per-sample loss), the uids
of the loss tensors and those of the trainable variables.

Import with benchmarks/ on sys.path (as the benchmark scripts do): `dlrm` and `wide_mlp` come from
_models.py.
"""

from __future__ import annotations

import math

import _models
import numpy as np

CLASS_LABELS = ((None,), "int64", "sparse_categorical_crossentropy")  # one class id per sample


def alexnet(k, image: int = 224, classes: int = 1000, dense: int = 4096):
    """Krizhevsky et al. 2012 as one tower: 5 convolutions (96 11x11/4, 256 5x5, 384, 384, 256 3x3), 3 max
    poolings (3x3/2), Dense 4096 / 4096 with dropout, Dense `classes` (no local response normalization)."""
    L = k.layers
    x = inp = k.Input((image, image, 3), name="image")
    x = L.Conv2D(96, 11, strides=4, padding="same", activation="relu", name="conv1")(x)
    x = L.MaxPooling2D(3, strides=2, name="pool1")(x)
    x = L.Conv2D(256, 5, padding="same", activation="relu", name="conv2")(x)
    x = L.MaxPooling2D(3, strides=2, name="pool2")(x)
    for i, f in enumerate((384, 384, 256), start=3):
        x = L.Conv2D(f, 3, padding="same", activation="relu", name=f"conv{i}")(x)
    x = L.MaxPooling2D(3, strides=2, name="pool5")(x)
    x = L.Flatten(name="flatten")(x)
    for i in (6, 7):
        x = L.Dense(dense, activation="relu", name=f"fc{i}")(x)
        x = L.Dropout(0.5, name=f"drop{i}")(x)
    out = L.Dense(classes, activation="softmax", name="fc8")(x)
    return (k.Model(inp, out), *CLASS_LABELS)


def _conv_bn(k, x, filters, size, strides=1, relu=True, name=""):
    L = k.layers
    x = L.Conv2D(filters, size, strides=strides, padding="same", use_bias=False, name=f"{name}_conv")(x)
    x = L.BatchNormalization(name=f"{name}_bn")(x)
    return L.Activation("relu", name=f"{name}_relu")(x) if relu else x


def resnet50_like(k, image: int = 224, classes: int = 1000, width: int = 64, blocks=(3, 4, 6, 3)):
    """ResNet-50 (v1.5: the stride on the 3x3): a 7x7/2 stem and 3x3/2 max pooling, then stages of
    bottleneck blocks (1x1, 3x3, 1x1 x4 convolutions, each with BatchNormalization; a projection shortcut
    on each stage's first block; Add and ReLU), global average pooling, Dense `classes`."""
    L = k.layers
    inp = k.Input((image, image, 3), name="image")
    x = _conv_bn(k, inp, width, 7, 2, name="stem")
    x = L.MaxPooling2D(3, strides=2, padding="same", name="stem_pool")(x)
    for s, n in enumerate(blocks):
        filters = width * 2 ** s
        for b in range(n):
            name = f"s{s + 1}b{b + 1}"
            stride = 2 if b == 0 and s > 0 else 1
            shortcut = x
            if b == 0:
                shortcut = _conv_bn(k, x, 4 * filters, 1, stride, relu=False, name=f"{name}_proj")
            h = _conv_bn(k, x, filters, 1, name=f"{name}_a")
            h = _conv_bn(k, h, filters, 3, stride, name=f"{name}_b")
            h = _conv_bn(k, h, 4 * filters, 1, relu=False, name=f"{name}_c")
            x = L.Activation("relu", name=f"{name}_out")(L.Add(name=f"{name}_add")([h, shortcut]))
    x = L.GlobalAveragePooling2D(name="avg_pool")(x)
    out = L.Dense(classes, activation="softmax", name="fc")(x)
    return (k.Model(inp, out), *CLASS_LABELS)


def _inception_a(k, x, pool_features, scale, name):
    """Inception-v3's 35x35 module: 1x1 | 1x1, 5x5 | 1x1, 3x3, 3x3 | 3x3 average pool, 1x1; concatenated."""
    L = k.layers
    c = lambda f: max(1, int(f * scale))  # noqa: E731 - a one-line width scaler
    b1 = _conv_bn(k, x, c(64), 1, name=f"{name}_1x1")
    b5 = _conv_bn(k, _conv_bn(k, x, c(48), 1, name=f"{name}_5x5a"), c(64), 5, name=f"{name}_5x5b")
    b3 = _conv_bn(k, x, c(64), 1, name=f"{name}_3x3a")
    b3 = _conv_bn(k, _conv_bn(k, b3, c(96), 3, name=f"{name}_3x3b"), c(96), 3, name=f"{name}_3x3c")
    bp = L.AveragePooling2D(3, strides=1, padding="same", name=f"{name}_pool")(x)
    bp = _conv_bn(k, bp, c(pool_features), 1, name=f"{name}_pool_1x1")
    return L.Concatenate(name=f"{name}_concat")([b1, b5, b3, bp])


def _reduction(k, x, scale, name):
    """Inception-v3's grid reduction: 3x3/2 | 1x1, 3x3, 3x3/2 | 3x3/2 max pool; concatenated."""
    L = k.layers
    c = lambda f: max(1, int(f * scale))  # noqa: E731 - a one-line width scaler
    b3 = _conv_bn(k, x, c(384), 3, 2, name=f"{name}_3x3")
    bd = _conv_bn(k, _conv_bn(k, x, c(64), 1, name=f"{name}_dbl_a"), c(96), 3, name=f"{name}_dbl_b")
    bd = _conv_bn(k, bd, c(96), 3, 2, name=f"{name}_dbl_c")
    bp = L.MaxPooling2D(3, strides=2, padding="same", name=f"{name}_pool")(x)
    return L.Concatenate(name=f"{name}_concat")([b3, bd, bp])


def inception_block(k, image: int = 224, classes: int = 1000, modules: int = 3, scale: float = 1.0):
    """An Inception-v3-like stack: the v3 stem (3x3/2, 3x3, 3x3, max pool, 1x1, 3x3, max pool; every
    convolution with BatchNormalization and ReLU), `modules` 35x35-style modules, a grid reduction,
    `modules - 1` more modules, global average pooling and Dense `classes`. `scale` scales every width."""
    L = k.layers
    c = lambda f: max(1, int(f * scale))  # noqa: E731 - a one-line width scaler
    inp = k.Input((image, image, 3), name="image")
    x = _conv_bn(k, inp, c(32), 3, 2, name="stem1")
    x = _conv_bn(k, x, c(32), 3, name="stem2")
    x = _conv_bn(k, x, c(64), 3, name="stem3")
    x = L.MaxPooling2D(3, strides=2, padding="same", name="stem_pool1")(x)
    x = _conv_bn(k, x, c(80), 1, name="stem4")
    x = _conv_bn(k, x, c(192), 3, name="stem5")
    x = L.MaxPooling2D(3, strides=2, padding="same", name="stem_pool2")(x)
    for i in range(modules):
        x = _inception_a(k, x, 32 if i == 0 else 64, scale, f"mixed{i}")
    x = _reduction(k, x, scale, "reduce")
    for i in range(modules, 2 * modules - 1):
        x = _inception_a(k, x, 128, 2 * scale, f"mixed{i}")
    x = L.GlobalAveragePooling2D(name="avg_pool")(x)
    out = L.Dense(classes, activation="softmax", name="predictions")(x)
    return (k.Model(inp, out), *CLASS_LABELS)


def _encoder_layer(k, x, d_model: int, heads: int, d_ff: int, name: str):
    """Post-norm encoder layer: multi-head self-attention, Add & LayerNorm, ReLU MLP, Add & LayerNorm."""
    L, ops = k.layers, k.ops
    seq, dk = x.shape[1], d_model // heads

    def split_heads(t, perm):  # (b, s, d) -> (b, h, s, dk), or (b, h, dk, s) for the keys
        return ops.transpose(ops.reshape(t, (-1, seq, heads, dk)), perm)

    q = split_heads(L.Dense(d_model, name=f"{name}_q")(x), (0, 2, 1, 3))
    kt = split_heads(L.Dense(d_model, name=f"{name}_k")(x), (0, 2, 3, 1))
    v = split_heads(L.Dense(d_model, name=f"{name}_v")(x), (0, 2, 1, 3))
    scores = ops.multiply(ops.matmul(q, kt), 1.0 / math.sqrt(dk))
    ctx = ops.matmul(ops.softmax(scores, axis=-1), v)
    ctx = ops.reshape(ops.transpose(ctx, (0, 2, 1, 3)), (-1, seq, d_model))
    att = L.Dense(d_model, name=f"{name}_out")(ctx)
    x = L.LayerNormalization(name=f"{name}_ln1")(L.Add(name=f"{name}_add1")([x, att]))
    h = L.Dense(d_ff, activation="relu", name=f"{name}_ff1")(x)
    h = L.Dense(d_model, name=f"{name}_ff2")(h)
    return L.LayerNormalization(name=f"{name}_ln2")(L.Add(name=f"{name}_add2")([x, h]))


def transformer_encoder(k, layers: int = 6, d_model: int = 512, heads: int = 8, seq: int = 128,
                        d_ff: int = 2048, vocab: int = 8192, classes: int = 2, pad_ops: int = 0):
    """A BERT/Vaswani-style encoder classifier: token Embedding plus fixed sinusoidal positions, `layers`
    encoder layers, mean pooling over the sequence, Dense `classes`. `pad_ops` extra ops (residual Dense
    blocks of 2 ops, a ReLU for an odd count) before the pooling let `big_graph` reach an op count."""
    if d_model % heads:
        raise ValueError(f"transformer_encoder: d_model={d_model} must be divisible by heads={heads}.")
    L, ops = k.layers, k.ops
    ids = k.Input((seq,), dtype="int32", name="tokens")
    x = L.Embedding(vocab, d_model, name="embed")(ids)
    x = ops.add(x, _positions(seq, d_model))
    for i in range(layers):
        x = _encoder_layer(k, x, d_model, heads, d_ff, f"enc{i}")
    for i in range(pad_ops // 2):
        x = L.Add(name=f"pad{i}_add")([x, L.Dense(d_model, activation="relu", name=f"pad{i}")(x)])
    if pad_ops % 2:
        x = L.Activation("relu", name="pad_relu")(x)
    x = L.GlobalAveragePooling1D(name="pool")(x)
    out = L.Dense(classes, activation="softmax", name="classifier")(x)
    return (k.Model(ids, out), *CLASS_LABELS)


def _positions(seq: int, d_model: int) -> np.ndarray:
    pos = np.arange(seq)[:, None] / np.power(10000.0, (np.arange(d_model)[None, :] // 2 * 2) / d_model)
    return np.where(np.arange(d_model) % 2 == 0, np.sin(pos), np.cos(pos)).astype(np.float32)


def _from_models(builder, k, **kwargs):
    model, _, y, loss = builder(k, 1, 1, **kwargs)
    return model, (None,) + tuple(y.shape[1:]), str(y.dtype), loss


def dlrm(k, **kwargs):
    """_models.dlrm (8 embedding tables of 100k x 64, bottom and top MLPs); kwargs go to it (tables, rows, dim)."""
    return _from_models(_models.dlrm, k, **kwargs)


def wide_mlp(k, **kwargs):
    """_models.wide_mlp (784 -> 4096 -> 4096 -> 10); kwargs go to it (width)."""
    return _from_models(_models.wide_mlp, k, **kwargs)


# The training graph of a transformer_encoder: the fixed ops (embedding, position constant and add,
# pooling (a reshape and a pool), classifier Dense and softmax, loss) and the ops of one encoder layer.
_FIXED_OPS, _LAYER_OPS = 8, 22


def big_graph(k, n_ops: int, d_model: int = 256, heads: int = 4, seq: int = 64, d_ff: int = 1024):
    """A deep transformer_encoder whose training graph has about `n_ops` ops (exactly, while the layers
    lower as they do today): as many encoder layers as fit, then residual Dense blocks for the rest."""
    if n_ops < _FIXED_OPS + _LAYER_OPS:
        raise ValueError(f"big_graph: n_ops={n_ops} is below the smallest graph it builds "
                         f"({_FIXED_OPS + _LAYER_OPS} ops: one encoder layer); ask for more ops.")
    layers, rest = divmod(n_ops - _FIXED_OPS, _LAYER_OPS)
    return transformer_encoder(k, layers=layers, d_model=d_model, heads=heads, seq=seq, d_ff=d_ff,
                               pad_ops=rest)


GRAPHS = {"alexnet": alexnet, "resnet50": resnet50_like, "inception": inception_block,
          "transformer": transformer_encoder, "dlrm": dlrm, "wide_mlp": wide_mlp}


def training_graph(model, label_shape, label_dtype, loss_name):
    """The search's view of a model: (training OpGraph, uids of the per-sample loss tensors, uids of the
    trainable variables).

    Args:
        model: a flexflow_keras model with known input shapes (a builder's first result).
        label_shape: the label shape, None for the batch. label_dtype: its dtype. loss_name: a Keras loss name.
    """
    from flexflow_keras import losses
    from flexflow_keras.execution import LossSpec, build_training_graph
    from flexflow_keras.ops.graph import TensorSpec

    xs = [np.zeros((1,) + tuple(t.shape[1:]), dtype=t.dtype) for t in model.inputs]
    g = model._graph_for(xs)
    spec = LossSpec(0, losses.get(loss_name), 1.0, TensorSpec(tuple(label_shape), label_dtype))
    tg = build_training_graph(g.inputs, g.outputs, [spec])
    seeds = {t.uid for t in tg.per_sample_losses if t is not None}
    return tg.graph, seeds, {v.uid for v in model.trainable_weights}
