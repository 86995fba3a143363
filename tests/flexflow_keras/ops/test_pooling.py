"""Pool2DOp / GlobalPool2DOp and their functional forms: shapes, the saved argmax, eager and symbolic
use, forward/backward through the Op contract, and errors."""

import numpy as np
import pytest

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops.base import KernelContext, op_registry
from flexflow_keras.ops.graph import KerasTensor, TensorSpec
from flexflow_keras.ops.pooling import GlobalPool2DOp, Pool2DOp, global_pool2d, pool2d
from kernels.pool2d import (
    global_pool2d_backward_reference,
    global_pool2d_reference,
    pool2d_backward_reference,
    pool2d_reference,
)


def _x(shape=(2, 7, 6, 3), seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _run(op, x, gy_seed=1, acc=False):
    specs = [TensorSpec(x.shape)]
    out_spec = op.output_specs(specs, [])[0]
    out = np.empty(out_spec.shape, np.float32)
    saved = [np.empty(s.shape, s.dtype) for s in op.saved_specs(specs, [])]
    ctx = KernelContext(training=True, accumulate_inputs=(acc,))
    op.forward(ctx, [x], [], [out], saved, [])
    gy = _x(out.shape, gy_seed)
    gx = np.ones_like(x)
    op.backward(ctx, [x], [], [out], saved, [], [gy], [gx], [])
    return out, gy, gx


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("acc", [False, True])
def test_pool_op(mode, acc):
    x = _x()
    op = Pool2DOp(pool_size=(3, 2), strides=(2, 1), padding="same", mode=mode)
    out, gy, gx = _run(op, x, acc=acc)
    np.testing.assert_allclose(out, pool2d_reference(x, (3, 2), (2, 1), "same", mode), rtol=1e-6, atol=1e-6)
    want = pool2d_backward_reference(x, gy, (3, 2), (2, 1), "same", mode)
    np.testing.assert_allclose(gx, want + (1.0 if acc else 0.0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_global_pool_op(mode, keepdims):
    x = _x()
    out, gy, gx = _run(GlobalPool2DOp(mode=mode, keepdims=keepdims), x)
    assert out.shape == ((2, 1, 1, 3) if keepdims else (2, 3))
    np.testing.assert_allclose(out.reshape(2, 3), global_pool2d_reference(x, mode), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gx, global_pool2d_backward_reference(x, gy.reshape(2, 3), mode), rtol=1e-6,
                               atol=1e-6)


def test_saved_argmax_only_for_max():
    specs = [TensorSpec((None, 24, 24, 64))]
    assert Pool2DOp(mode="max").saved_specs(specs, []) == (TensorSpec((None, 12, 12, 64), "int32"),)
    assert Pool2DOp(mode="avg").saved_specs(specs, []) == ()
    assert GlobalPool2DOp(mode="max").saved_specs(specs, []) == (TensorSpec((None, 64), "int32"),)


def test_functional_eager_and_symbolic():
    x = _x((2, 24, 24, 4))
    np.testing.assert_allclose(pool2d(x, 2), pool2d_reference(x, (2, 2), (2, 2)), rtol=1e-6)
    np.testing.assert_allclose(global_pool2d(x, "max"), global_pool2d_reference(x, "max"), rtol=1e-6)
    y = pool2d(KerasTensor((None, 24, 24, 64)), (2, 2))
    assert y.shape == (None, 12, 12, 64)
    assert y.node.op == Pool2DOp(pool_size=(2, 2), strides=(2, 2), padding="valid", mode="max")
    assert pool2d(KerasTensor((None, 5, 5, 1)), 2, 1, "same", "avg").shape == (None, 5, 5, 1)
    assert global_pool2d(KerasTensor((None, 5, 5, 7)), keepdims=True).shape == (None, 1, 1, 7)
    assert op_registry()["pool2d"] is Pool2DOp and op_registry()["global_pool2d"] is GlobalPool2DOp


@pytest.mark.parametrize("call, error, message", [
    (lambda: pool2d(KerasTensor((None, 24, 24)), 2), ShapeError, "4-D"),
    (lambda: pool2d(KerasTensor((None, 1, 24, 3)), 2), ShapeError, "padding='same'"),
    (lambda: pool2d(KerasTensor((None, 4, 4, 3)), 2, mode="min"), ValueError, "mode"),
    (lambda: pool2d(KerasTensor((None, 4, 4, 3)), 0), ValueError, "pool_size"),
    (lambda: pool2d(KerasTensor((None, 4, 4, 3)), 2, padding="full"), ValueError, "padding"),
    (lambda: global_pool2d(KerasTensor((None, 4, 3)), "avg"), ShapeError, "4-D"),
    (lambda: global_pool2d(KerasTensor((None, 4, 4, 3)), "sum"), ValueError, "mode"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
