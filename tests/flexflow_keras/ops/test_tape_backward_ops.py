"""The tape's backward as ops (ops/backward_ops.py): a gradient taken while another tape records runs as
recorded ops; its values must be the kernels' own gradients (the ones an ordinary gradient gives), op by
op, and the outer tape must differentiate them (checked here against finite differences; against
TensorFlow in test_tape_second_order.py)."""

import numpy as np
import pytest

from flexflow_keras import layers, ops
from flexflow_keras.errors import GraphError
from flexflow_keras.ops.tape import GradientTape

RNG = np.random.default_rng(7)


def _t(*shape, positive=False):
    a = RNG.standard_normal(shape).astype("float32")
    return ops.convert_to_tensor(np.abs(a) + 0.5 if positive else a)


def _both_ways(fn, *xs):
    """The gradient of sum(fn(*xs) * w) for a fixed random w, by the kernels and by the ops."""
    with GradientTape(persistent=True) as tape:
        for x in xs:
            tape.watch(x)
        y = fn(*xs)
        w = RNG.standard_normal(np.shape(y)).astype("float32")
        target = ops.sum(y * w)
    fast = tape.gradient(target, list(xs))
    with GradientTape() as outer:
        as_ops = tape.gradient(target, list(xs))
    assert outer._entries, "the second gradient should have been recorded"
    return fast, as_ops


CASES = {
    "matmul": (lambda a, b: ops.matmul(a, b), [(2, 3, 4), (4, 5)]),
    "matmul_vec": (lambda a, b: ops.matmul(a, b), [(3, 4), (4,)]),
    "divide_broadcast": (lambda a, b: a / b, [(3, 4), (4,)], (False, True)),
    "power": (lambda a, b: ops.power(a, b), [(3, 4), (3, 4)], (True, False)),
    "maximum": (lambda a, b: ops.maximum(a, b), [(3, 4), (3, 1)]),
    "where": (lambda a, b: ops.where(a > 0, a * 2.0, b), [(3, 4), (3, 4)]),
    "reduce_max": (lambda a: ops.max(a, axis=1), [(3, 4)]),
    "mean_keepdims": (lambda a: ops.mean(a, axis=0, keepdims=True) * a, [(3, 4)]),
    "concat_slice": (lambda a, b: ops.concatenate([a, b], axis=1)[:, 1:5] ** 3, [(3, 2), (3, 4)]),
    "transpose_reshape": (lambda a: ops.reshape(ops.transpose(a, (1, 0, 2)), (4, 6)), [(3, 4, 2)]),
    "expand_broadcast": (lambda a: ops.broadcast_to(ops.expand_dims(a, 1), (3, 5, 4)), [(3, 4)]),
    "unary": (lambda a: ops.exp(ops.sin(a)) + ops.log(ops.abs(a) + 1.0) + ops.sqrt(ops.square(a) + 1.0)
              + ops.tanh(a) + ops.erf(a) + ops.clip(a, -0.5, 0.5) + 1.0 / (ops.abs(a) + 1.0), [(3, 4)]),
    "softmax": (lambda a: ops.softmax(a) + ops.log_softmax(a), [(3, 5)]),
    "activations": (lambda a: ops.silu(a) + ops.gelu(a, approximate=False) + ops.elu(a) + ops.relu(a)
                    + ops.softplus(a) + ops.sigmoid(a) + ops.leaky_relu(a, negative_slope=0.1), [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_backward_as_ops_gives_the_kernels_gradients(name):
    fn, shapes, *positive = CASES[name]
    pos = positive[0] if positive else (False,) * len(shapes)
    fast, as_ops = _both_ways(fn, *[_t(*s, positive=p) for s, p in zip(shapes, pos, strict=True)])
    for a, b in zip(fast, as_ops, strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("strides,padding", [((2, 2), "same"), ((1, 1), "valid"), ((2, 1), "valid")])
def test_conv_dense_dropout_layers_backward_as_ops(strides, padding):
    """Conv2D's input gradient (a transposed convolution, cropped) and kernel gradient (a convolution dilated
    by the strides), Dropout's mask in training, Dense and the padding layers."""
    conv = layers.Conv2D(3, (3, 2), strides=strides, padding=padding, activation="tanh")
    drop, dense = layers.Dropout(0.4), layers.Dense(2, activation="silu")
    pad, crop, flat = layers.ZeroPadding2D((1, 2)), layers.Cropping2D(((1, 0), (0, 1))), layers.Flatten()
    x = _t(2, 7, 6, 2)

    def net(x):
        return dense(drop(flat(crop(conv(pad(x)))), training=True))

    net(x)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        target = ops.sum(ops.square(net(x)))
    sources = [x, *conv.trainable_weights, *dense.trainable_weights]
    fast = tape.gradient(target, sources)
    with GradientTape():
        as_ops = tape.gradient(target, sources)
    for a, b in zip(fast, as_ops, strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-5)


def test_second_derivatives_match_finite_differences():
    """d/dx of (d/dx sum(f(x)))^2 for f built of Dense + softplus: the outer tape through the inner one."""
    dense1, dense2 = layers.Dense(5, activation="softplus"), layers.Dense(1)
    x = _t(3, 2).numpy().astype("float64").astype("float32")

    def penalty(xv):
        xv = ops.convert_to_tensor(xv)
        with GradientTape() as outer:
            outer.watch(xv)
            with GradientTape() as inner:
                inner.watch(xv)
                u = dense2(dense1(xv))
            g = inner.gradient(u, xv)
            p = ops.sum(ops.square(g))
        return float(p), outer.gradient(p, xv)

    _, analytic = penalty(x)
    eps, numeric = 1e-2, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        numeric[i] = (penalty(hi)[0] - penalty(lo)[0]) / (2 * eps)
    np.testing.assert_allclose(np.asarray(analytic), numeric, rtol=2e-2, atol=1e-3)


def test_a_dilated_convolution_keeps_its_first_order_gradient_and_refuses_the_second():
    conv = layers.Conv2D(2, 3, dilation_rate=2, name="atrous")
    x = _t(1, 7, 7, 1)
    conv(x)
    with GradientTape() as outer:
        with GradientTape() as inner:
            inner.watch(x)
            y = ops.sum(conv(x))
        g = inner.gradient(y, x)
        p = ops.sum(ops.square(g))
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ops.sum(conv(x))
    np.testing.assert_allclose(np.asarray(g), np.asarray(tape.gradient(y, x)), rtol=1e-6)
    with pytest.raises(GraphError, match="'atrous'.*Conv2DOp.*a dilated convolution"):
        outer.gradient(p, conv.trainable_weights)
