"""Conv2DOp and ops.conv.conv2d: shapes, saved buffers, eager and symbolic use, forward/backward through
the Op contract (accumulate flags), and error messages."""

import numpy as np
import pytest

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops.base import KernelContext, op_registry
from flexflow_keras.ops.conv import Conv2DOp, conv2d
from flexflow_keras.ops.graph import KerasTensor, TensorSpec, Variable
from kernels.conv2d import conv2d_backward_reference, conv2d_reference


def _data(seed=0, shape=(3, 9, 8, 2), kshape=(3, 3, 2, 4)):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    k = (rng.standard_normal(kshape) / np.sqrt(np.prod(kshape[:3]))).astype(np.float32)
    b = rng.standard_normal(kshape[-1]).astype(np.float32) * 0.1
    return x, k, b


def _run(op, x, weights, gy=None, acc_x=False, acc_w=(False, False), base=None):
    """Forward then backward through the Op contract with buffers the way the execution layer makes them."""
    in_specs = [TensorSpec(x.shape, "float32")]
    w_specs = [TensorSpec(w.shape, "float32") for w in weights]
    out = np.empty(op.output_specs(in_specs, w_specs)[0].shape, np.float32)
    saved = [np.empty(s.shape, s.dtype) for s in op.saved_specs(in_specs, w_specs)]
    ctx = KernelContext(training=True, accumulate_inputs=(acc_x,), accumulate_weights=acc_w)
    op.forward(ctx, [x], weights, [out], saved, [])
    if gy is None:
        return out, None
    grads = [a.copy() for a in base] if base is not None else [np.empty_like(a) for a in [x, *weights]]
    op.backward(ctx, [x], weights, [out], saved, [], [gy], [grads[0]], grads[1:])
    return out, grads


@pytest.mark.parametrize("activation", ["relu", "tanh", "gelu"])
def test_op_forward_backward_match_reference(activation):
    x, k, b = _data()
    op = Conv2DOp(strides=(2, 1), padding="same", activation=activation)
    want = conv2d_reference(x, k, b, (2, 1), "same", activation)
    gy = np.random.default_rng(5).standard_normal(want.shape).astype(np.float32)
    out, (gx, gk, gb) = _run(op, x, [k, b], gy)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    dx, dk, db = conv2d_backward_reference(x, k, b, gy, (2, 1), "same", activation)
    for got, ref in ((gx, dx), (gk, dk), (gb, db)):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_op_accumulate_flags():
    x, k, b = _data(1)
    op = Conv2DOp(activation="relu")
    want = conv2d_reference(x, k, b, (1, 1), "valid", "relu")
    gy = np.random.default_rng(6).standard_normal(want.shape).astype(np.float32)
    dx, dk, db = conv2d_backward_reference(x, k, b, gy, (1, 1), "valid", "relu")
    base = [np.ones_like(a) for a in (x, k, b)]
    _, (gx, gk, gb) = _run(op, x, [k, b], gy, acc_x=True, acc_w=(False, True), base=base)
    np.testing.assert_allclose(gx, 1 + dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gk, dk, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gb, 1 + db, rtol=1e-4, atol=1e-5)


def test_op_without_bias_and_without_input_gradient():
    x, k, _ = _data(2)
    op = Conv2DOp()
    in_specs, w_specs = [TensorSpec(x.shape)], [TensorSpec(k.shape)]
    out = np.empty(op.output_specs(in_specs, w_specs)[0].shape, np.float32)
    ctx = KernelContext(training=True)
    op.forward(ctx, [x], [k], [out], [], [])
    gy = np.ones_like(out)
    gk = np.empty_like(k)
    op.backward(ctx, [x], [k], [out], [], [], [gy], [None], [gk])
    _, dk, _ = conv2d_backward_reference(x, k, None, gy)
    np.testing.assert_allclose(gk, dk, rtol=1e-4, atol=1e-4)


def test_saved_pre_activation_only_when_needed():
    specs = [TensorSpec((None, 28, 28, 1))], [TensorSpec((3, 3, 1, 32)), TensorSpec((32,))]
    assert Conv2DOp(activation="relu").saved_specs(*specs) == ()
    assert Conv2DOp(activation="gelu").saved_specs(*specs) == (TensorSpec((None, 26, 26, 32), "float32"),)


def test_eager_functional_matches_reference():
    x, k, b = _data(3)
    y = conv2d(x, k, b, strides=2, padding="same", activation="relu")
    np.testing.assert_allclose(y, conv2d_reference(x, k, b, (2, 2), "same", "relu"), rtol=1e-4, atol=1e-5)
    y2 = conv2d(x, k, activation=lambda t: t * 2.0)  # a callable runs after the linear conv
    np.testing.assert_allclose(y2, 2.0 * conv2d_reference(x, k), rtol=1e-4, atol=1e-5)


def test_symbolic_records_a_node():
    x = KerasTensor((None, 28, 28, 1))
    kernel = Variable("kernel", (3, 3, 1, 32))
    bias = Variable("bias", (32,))
    y = conv2d(x, kernel, bias, activation="relu")
    assert y.shape == (None, 26, 26, 32)
    assert isinstance(y.node.op, Conv2DOp)
    assert y.node.op == Conv2DOp(strides=(1, 1), padding="valid", activation="relu")
    assert y.node.weights == (kernel, bias)
    z = conv2d(KerasTensor((None, 7, 9, 3)), Variable("k", (2, 2, 3, 5)), strides=(2, 2), padding="SAME")
    assert z.shape == (None, 4, 5, 5)


def test_registered_and_hashable():
    assert op_registry()["conv2d"] is Conv2DOp
    assert hash(Conv2DOp(activation="relu")) == hash(Conv2DOp(activation="relu"))


@pytest.mark.parametrize("call, error, message", [
    (lambda: conv2d(KerasTensor((None, 28, 28)), Variable("k", (3, 3, 1, 2))), ShapeError, "4-D"),
    (lambda: conv2d(KerasTensor((None, 28, 28, 3)), Variable("k", (3, 3, 1, 2))), ShapeError, "3 channels"),
    (lambda: conv2d(KerasTensor((None, 2, 28, 1)), Variable("k", (3, 3, 1, 2))), ShapeError, "padding='same'"),
    (lambda: conv2d(KerasTensor((None, 8, 8, 1)), Variable("k", (3, 3, 1, 2)), Variable("b", (3,))),
     ShapeError, "bias of shape"),
    (lambda: conv2d(KerasTensor((None, 8, 8, 1)), Variable("k", (3, 3, 1, 2)), strides=2, dilation_rate=2),
     ValueError, r"conv2d: `strides > 1` not supported in conjunction with `dilation_rate > 1` .*strides=\(2, 2\) "
                 r"and dilation_rate=\(2, 2\)\. Use strides=1"),
    (lambda: conv2d(KerasTensor((None, 8, 8, 1)), Variable("k", (3, 3, 1, 2)), dilation_rate=4), ShapeError,
     r"smaller than the kernel's \(dilated by \(4, 4\)\) 9 with padding='valid'"),
    (lambda: conv2d(KerasTensor((None, 8, 8, 1)), Variable("k", (3, 3, 1, 2)), padding="full"), ValueError,
     "padding"),
    (lambda: conv2d(KerasTensor((None, 8, 8, 1)), Variable("k", (3, 3, 1, 2)), strides=(1, 0)), ValueError,
     "strides"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
