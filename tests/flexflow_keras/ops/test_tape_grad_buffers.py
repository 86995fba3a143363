"""The gradient buffers a GradientTape hands an op's backward kernels (ops/tape.grad_buffers): uninitialised
only for the op kinds listed in `tape.OVERWRITING`, so each of those must write every element of every
buffer. Each case below runs eager layers and keras.ops under a tape; every backward the tape runs through
the kernels is run again with NaN-filled buffers, and an op kind overwrites when no NaN is left and the
gradients equal those from zeroed buffers. Every registered op kind is either run here or named as one a
tape never hands gradient buffers to, so a new op kind is classified when it is added."""

import importlib
import pkgutil

import numpy as np
import pytest

import flexflow_keras.ops
from flexflow_keras import layers, losses, ops
from flexflow_keras.ops import tape as tape_mod
from flexflow_keras.ops.base import apply_op, op_registry
from flexflow_keras.ops.dynamic_dims import InsertAxisOp
from flexflow_keras.ops.nn_ops import LinearOp
from flexflow_keras.ops.penalty import penalty
from flexflow_keras.ops.tape import GradientTape
from flexflow_keras.ops.time_slice import time_slice
from flexflow_keras.ops.weights_as_inputs import WeightsAsInputsOp

RNG = np.random.default_rng(0)

# Op kinds without a backward the tape runs with buffers here, and why.
NOT_RUN = {
    "argmax": "integer output", "compare": "boolean output", "fill": "no float input", "range": "no input",
    "random": "no float input", "batch_size": "integer output", "one_hot": "integer input",
    "category_encoding": "integer input", "variable": "reads a Variable, no backward kernel",
    "stop_gradient": "no gradient", "binary": "the base of add, subtract, ...: those run instead",
    "whole_batch_penalty": "only in a symbolic graph (a cross-batch activity regularizer, ops/whole_batch.py): "
                           "called eagerly, the regularizer runs its own ops",
}


def x(*shape):
    return ops.convert_to_tensor(RNG.standard_normal(shape).astype("float32"))


def _layer(layer, *shape):
    inp = x(*shape)
    return lambda: layer(inp, training=True), [inp]


def _layer_ids(layer, ids):
    return lambda: layer(ids), []


def _penalty():
    dense = layers.Dense(3, kernel_regularizer="l2", bias_regularizer="l1")
    inp = x(2, 4)
    dense.build((None, 4))
    return lambda: dense(inp) + penalty(dense.kernel) + penalty(dense.bias), [inp]


@ops.custom_gradient
def _cube_with_its_own_gradient(a):
    return a * a * a, lambda g: 3.0 * g * a * a


def _slice_gradient(a):
    """A gradient taken while the outer tape records: its slice's adjoint is an op the outer tape records."""
    with GradientTape() as inner:
        inner.watch(a)
        y = ops.sum(a[1:, ::2] * a[1:, ::2]) + ops.sum(ops.tanh(a))
    return inner.gradient(y, a) * a


def _fn(f, *shapes):
    inputs = [x(*s) for s in shapes]
    return lambda: f(*inputs), inputs


CASES = {
    "dense": lambda: _layer(layers.Dense(5, activation="relu"), 4, 3),
    "dense_sigmoid": lambda: _layer(layers.Dense(3, activation="sigmoid"), 4, 6),
    "conv2d": lambda: _layer(layers.Conv2D(4, 3, padding="same", activation="tanh"), 2, 6, 6, 3),
    "conv2d_strided": lambda: _layer(layers.Conv2D(6, 4, strides=2, padding="same"), 2, 8, 8, 5),
    "conv2d_taps": lambda: _layer(layers.Conv2D(3, 5, padding="same"), 2, 6, 6, 64),
    # 8 samples of 8x8: the 512 output pixels from which conv2d's rule takes F(4x4, 3x3)
    "conv2d_winograd": lambda: _layer(layers.Conv2D(32, 3, padding="same", activation="relu"), 8, 8, 8, 32),
    "conv2d_transpose": lambda: _layer(layers.Conv2DTranspose(4, 4, strides=2, padding="same"), 2, 4, 4, 8),
    "conv1d": lambda: _layer(layers.Conv1D(4, 3, padding="causal"), 2, 7, 3),
    "conv1d_transpose": lambda: _layer(layers.Conv1DTranspose(3, 3, strides=2), 2, 5, 4),
    "conv3d": lambda: _layer(layers.Conv3D(2, 2), 2, 4, 4, 4, 3),
    "conv3d_transpose": lambda: _layer(layers.Conv3DTranspose(2, 2, strides=2), 2, 3, 3, 3, 2),
    "depthwise_conv2d": lambda: _layer(layers.DepthwiseConv2D(3, padding="same"), 2, 5, 5, 3),
    "depthwise_conv1d": lambda: _layer(layers.DepthwiseConv1D(3), 2, 6, 3),
    "separable": lambda: _layer(layers.SeparableConv2D(4, 3), 2, 6, 6, 3),
    "pool2d_max": lambda: _layer(layers.MaxPooling2D(2), 2, 6, 6, 3),
    "pool2d_avg": lambda: _layer(layers.AveragePooling2D(3, strides=2, padding="same"), 2, 7, 7, 3),
    "pool1d": lambda: _layer(layers.MaxPooling1D(2), 2, 6, 3),
    "pool3d": lambda: _layer(layers.AveragePooling3D(2), 2, 4, 4, 4, 2),
    "global_pool": lambda: _layer(layers.GlobalAveragePooling2D(), 2, 4, 4, 3),
    "global_max_pool": lambda: _layer(layers.GlobalMaxPooling2D(), 2, 4, 4, 3),
    "batch_norm": lambda: _layer(layers.BatchNormalization(), 6, 4),
    "layer_norm": lambda: _layer(layers.LayerNormalization(), 3, 5),
    "dropout": lambda: _layer(layers.Dropout(0.5), 4, 6),
    "alpha_dropout": lambda: _layer(layers.AlphaDropout(0.3), 4, 6),
    "gaussian_noise": lambda: _layer(layers.GaussianNoise(0.1), 4, 6),
    "leaky_relu": lambda: _layer(layers.LeakyReLU(negative_slope=0.2), 3, 5),
    "prelu": lambda: _layer(layers.PReLU(), 3, 5),
    "softmax_layer": lambda: _layer(layers.Softmax(), 3, 5),
    "flatten": lambda: _layer(layers.Flatten(), 2, 3, 4),
    "reshape": lambda: _layer(layers.Reshape((6, 2)), 2, 3, 4),
    "permute": lambda: _layer(layers.Permute((2, 1)), 2, 3, 4),
    "upsampling": lambda: _layer(layers.UpSampling2D(2), 2, 3, 3, 2),
    "zero_padding": lambda: _layer(layers.ZeroPadding2D(1), 2, 3, 3, 2),
    "cropping": lambda: _layer(layers.Cropping2D(1), 2, 5, 5, 2),
    "repeat_vector": lambda: _layer(layers.RepeatVector(3), 2, 4),
    "lstm": lambda: _layer(layers.LSTM(3, return_sequences=True), 2, 4, 3),
    "gru": lambda: _layer(layers.GRU(3), 2, 4, 3),
    "simple_rnn": lambda: _layer(layers.SimpleRNN(3), 2, 4, 3),
    "conv_lstm": lambda: _layer(layers.ConvLSTM2D(2, 3, padding="same"), 2, 3, 5, 5, 2),
    "einsum_dense": lambda: _layer(layers.EinsumDense("ab,bc->ac", output_shape=4, bias_axes="c"), 3, 5),
    "attention": lambda: _fn(lambda q, v: layers.MultiHeadAttention(2, 3)(q, v), (2, 4, 6), (2, 5, 6)),
    "activity_regularization": lambda: _layer(layers.ActivityRegularization(l1=0.1, l2=0.1), 3, 4),
    "resizing": lambda: _layer(layers.Resizing(5, 7), 2, 3, 4, 2),
    "take": lambda: _fn(lambda w: ops.take(w, np.array([0, 2, 2, 1])) * 2.0, (4, 3)),
    "arithmetic": lambda: _fn(lambda a, b: (a + b) * a - b / (ops.abs(a) + 1.0) - a ** 2, (3, 4), (3, 4)),
    "broadcast": lambda: _fn(lambda a, b: (a + b) * b - a / (ops.abs(b) + 1.0) - (b - a), (3, 4), (1, 4)),
    "scalar": lambda: _fn(lambda a: 2.0 * a - 1.0 + a / 3.0, (3, 4)),
    "unary": lambda: _fn(lambda a: ops.tanh(a) + ops.exp(-a) + ops.sigmoid(a) + ops.sin(a), (3, 4)),
    "minmax": lambda: _fn(lambda a, b: ops.maximum(a, b) + ops.minimum(a, 0.5 * b), (3, 4), (3, 4)),
    "power": lambda: _fn(lambda a, b: ops.power(ops.abs(a) + 1.0, b), (3, 4), (3, 4)),
    "where": lambda: _fn(lambda a, b: ops.where(a > 0, a, b), (3, 4), (3, 4)),
    "cast": lambda: _fn(lambda a: ops.cast(ops.cast(a, "float64") * 2.0, "float32"), (3, 4)),
    "reduce": lambda: _fn(lambda a: ops.sum(a, axis=0) + ops.max(a, axis=0) + ops.mean(a, axis=0)
                          + ops.min(a, axis=0), (3, 4)),
    "prod": lambda: _fn(lambda a: ops.prod(a, axis=1), (3, 4)),
    "cumsum": lambda: _fn(lambda a: ops.cumsum(a, axis=1) + ops.cumprod(a, axis=1), (3, 4)),
    "softmax": lambda: _fn(lambda a: ops.softmax(a) + ops.log_softmax(a), (3, 4)),
    "matmul": lambda: _fn(lambda a, b: ops.matmul(a, b), (3, 4), (4, 5)),
    "einsum": lambda: _fn(lambda a, b: ops.einsum("ij,kj->ik", a, b), (3, 4), (5, 4)),
    "transpose": lambda: _fn(lambda a: ops.transpose(a, (1, 0)) * 2.0, (3, 4)),
    "concat": lambda: _fn(lambda a, b: ops.concatenate([a, b], axis=1) * 2.0, (3, 4), (3, 2)),
    "stack": lambda: _fn(lambda a, b: ops.stack([a, b]) * 2.0, (3, 4), (3, 4)),
    "slice": lambda: _fn(lambda a: a[:, 1] * a[0, 2] + ops.sum(a[1:, ::-2]), (3, 4)),
    "expand": lambda: _fn(lambda a: ops.expand_dims(a, 1) * ops.squeeze(a[:, None], 1)[:, None], (3, 4)),
    "tile": lambda: _fn(lambda a: ops.tile(a, (2, 3)), (3, 4)),
    "repeat": lambda: _fn(lambda a: ops.repeat(a, 2, axis=1), (3, 4)),
    "broadcast_to": lambda: _fn(lambda a: ops.broadcast_to(a, (2, 3, 4)), (3, 4)),
    "pad": lambda: _fn(lambda a: ops.pad(a, [[1, 0], [0, 2]]), (3, 4)),
    "take_along_axis": lambda: _fn(lambda a: ops.take_along_axis(a, np.array([[0, 3], [1, 1], [2, 0]]), 1), (3, 4)),
    "gather": lambda: _fn(lambda a: ops.take(a, np.array([2, 0, 2]), axis=0), (3, 4)),
    "sort_topk": lambda: _fn(lambda a: ops.sort(a) + ops.top_k(a, 4)[0], (3, 4)),
    "segment": lambda: _fn(lambda a: ops.segment_sum(a, np.array([0, 0, 1]), num_segments=2), (3, 4)),
    "image_resize": lambda: _fn(lambda a: ops.image.resize(a, (5, 6), interpolation="bilinear"), (2, 3, 4, 2)),
    "affine": lambda: _fn(lambda a: ops.image.affine_transform(
        a, np.array([[1.0, 0.1, 0.2, 0.0, 1.0, -0.1, 0.0, 0.0]], "float32")), (1, 5, 5, 2)),
    "losses": lambda: _fn(lambda p: losses.BinaryCrossentropy()(np.array([[0.0, 1, 1, 0]] * 3, "float32"),
                                                                ops.sigmoid(p))
                          + losses.CategoricalCrossentropy(from_logits=True)(np.eye(3, 4, dtype="float32"), p)
                          + losses.MeanSquaredError()(np.ones((3, 4), "float32"), p), (3, 4)),
    "embedding": lambda: _layer_ids(layers.Embedding(5, 3), np.array([[0, 2], [2, 4]])),
    "penalty": lambda: _penalty(),
    "time_slice": lambda: _fn(lambda a: time_slice(a, 1) * 2.0, (2, 3, 4)),
    "insert_axis": lambda: _fn(lambda a: apply_op(InsertAxisOp(1), [a]) * 2.0, (3, 4)),
    "random_affine": lambda: _layer(layers.RandomRotation(0.1, seed=1), 2, 5, 5, 2),
    "random_value": lambda: _layer(layers.RandomContrast(0.3, seed=1), 2, 5, 5, 2),
    "weights_as_inputs": lambda: _fn(lambda a, w, b: apply_op(WeightsAsInputsOp(LinearOp("tanh")), [a, w, b]),
                                     (3, 4), (4, 2), (2,)),
    "second_order": lambda: _fn(_slice_gradient, (3, 4)),
    "ctc": lambda: _fn(lambda a: ops.ctc_loss(np.array([[1, 2], [2, 1]]), a, np.array([2, 2]),
                                              np.array([5, 5])), (2, 5, 4)),
    "norm": lambda: _fn(lambda a: ops.norm(a) + ops.logsumexp(a, axis=1)[0], (3, 4)),
    "custom_gradient": lambda: _fn(lambda a: _cube_with_its_own_gradient(a) * 2.0, (3, 4)),
}


if hasattr(ops, "depth_to_space"):
    CASES["depth_to_space"] = lambda: _fn(lambda a: ops.depth_to_space(a, 2) * 2.0, (2, 3, 3, 8))


def _registry() -> set:
    """Every op kind of flexflow_keras.ops, its modules all imported."""
    for m in pkgutil.iter_modules(flexflow_keras.ops.__path__):
        importlib.import_module(f"flexflow_keras.ops.{m.name}")
    return set(op_registry())


def _recorded(case):
    """Run a case under a tape, collect each (entry, output gradients, need_in, need_w) whose backward ran
    through the kernels."""
    seen = []
    real = tape_mod._kernel_backward

    def spy(e, gouts, need_in, need_w):
        seen.append((e, [np.array(g) for g in gouts], need_in, need_w))
        return real(e, gouts, need_in, need_w)

    f, sources = case()
    with GradientTape(persistent=True) as tape:
        for s in sources:
            tape.watch(s)
        y = f()
        ys = y if isinstance(y, (tuple, list)) else [y]
    tape_mod._kernel_backward = spy
    try:
        tape.gradient([t for t in ys if np.asarray(t).dtype.kind == "f"], sources + tape.watched_variables())
    finally:
        tape_mod._kernel_backward = real
    return seen


def _filled(e, need_in, need_w, value):
    gin = [np.full(a.shape, value, a.dtype) if need else None for a, need in zip(e.arrays, need_in, strict=True)]
    gw = [np.full(w.shape, value, w.dtype) if need else None for w, need in zip(e.wvals, need_w, strict=True)]
    return gin, gw


def _overwrites(e, gouts, need_in, need_w) -> bool:
    """Whether the entry's backward kernels write every element of NaN-filled buffers, with the values they
    write into zeroed ones."""
    zin, zw = _filled(e, need_in, need_w, 0)
    tape_mod.run_backward(e, gouts, zin, zw)
    nin, nw = _filled(e, need_in, need_w, np.nan)
    tape_mod.run_backward(e, gouts, nin, nw)
    pairs = [(z, n) for z, n in zip(zin + zw, nin + nw, strict=True) if z is not None and z.dtype.kind == "f"]
    return all(np.array_equal(z, n, equal_nan=True) for z, n in pairs)  # a NaN left shows in n only


def _classify():
    kinds: dict[str, bool] = {}
    for case in CASES.values():
        for e, gouts, need_in, need_w in _recorded(case):
            kind = e.op.type_name
            kinds[kind] = kinds.get(kind, True) and _overwrites(e, gouts, need_in, need_w)
    return kinds


@pytest.fixture(scope="module")
def kinds():
    return _classify()


def test_every_overwriting_kind_writes_every_element(kinds):
    unverified = sorted(k for k in tape_mod.OVERWRITING if not kinds.get(k, False))
    assert not unverified, (f"op kinds in tape.OVERWRITING whose backward left a NaN-filled gradient buffer "
                            f"element unwritten (or that no case here runs): {unverified}")


def test_every_registered_kind_is_run_or_named(kinds):
    missing = sorted(_registry() - set(kinds) - set(NOT_RUN))
    assert not missing, f"op kinds neither run by a case here nor named in NOT_RUN: {missing}"


def test_a_kind_that_accumulates_is_caught(monkeypatch):
    """The check itself can fail: a backward that adds into its buffers is not an overwriting one."""
    (e, gouts, need_in, need_w), *_ = _recorded(CASES["dense"])
    real = type(e.op).backward

    def adding(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        # stands for a kernel that adds its gradients into what the buffers held
        mine = [None if g is None else np.zeros_like(g) for g in grad_inputs + grad_weights]
        n = len(grad_inputs)
        real(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, mine[:n], mine[n:])
        for g, m in zip(grad_inputs + grad_weights, mine, strict=True):
            if g is not None:
                g += m

    monkeypatch.setattr(type(e.op), "backward", adding)
    assert not _overwrites(e, gouts, need_in, need_w)
