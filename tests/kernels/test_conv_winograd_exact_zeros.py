"""Winograd convolutions keep the exact zeros of outputs whose receptive field holds only zeros, as a direct
convolution (and TensorFlow's) does: otherwise tiles straddling the edge of a zero region (an image's
background) leave tiny values of either sign there, and a ReLU lets the positive ones' gradient through into
the bias (the DeepLearning.AI object-localization lab's first step: the 2nd and 3rd convolutions' bias
updates 9% and 37% off TensorFlow's). Done while some bias is exactly 0 (Keras' initial biases)."""

import numpy as np
import pytest

from kernels import conv2d as K


def _input(n=4, h=19, c=8, seed=0):
    rng = np.random.default_rng(seed)
    x = np.maximum(rng.standard_normal((n, h, h, c)), 0).astype(np.float32)
    x[:, :, : h // 2] = 0.0  # a zero region, as a digit's background after a ReLU
    x[:, : h // 3] = 0.0
    x[1, 5:9, 3:12] = 0.0  # and a hole
    return x


@pytest.mark.parametrize("algo", ["winograd4", "winograd"])
@pytest.mark.parametrize("padding", ["valid", "same"])
@pytest.mark.parametrize("activation", ["relu", None, "tanh"])
def test_zero_fields_are_exact_and_the_relu_gradient_equals_gemms(algo, padding, activation):
    x = _input()
    rng = np.random.default_rng(1)
    k = (rng.standard_normal((3, 3, 8, 16)) * 0.3).astype(np.float32)
    b = np.zeros(16, np.float32)
    b[::3] = 0.25  # some channels' biases already moved, the others still Keras' zeros
    g = K.conv_geometry(x.shape, k.shape, (1, 1), padding)
    outs = {}
    for a in ("gemm", algo):
        out = np.empty((g.n, g.oh, g.ow, g.co), np.float32)
        pre = np.empty_like(out) if activation == "tanh" else None
        K.conv2d_forward_cpu(x, k, b, out, padding=padding, activation=activation, pre_activation=pre, algorithm=a)
        outs[a] = out
    zero_field = np.all(outs["gemm"] == (np.maximum(b, 0) if activation == "relu" else outs["gemm"]), axis=3)
    exact = outs["gemm"] == outs[algo]
    want_value = {"relu": np.maximum(b, 0), None: b, "tanh": np.tanh(b)}[activation]
    field = np.ones((g.n, g.oh, g.ow), bool)  # the receptive fields that hold only zeros
    nz = np.pad(np.any(x != 0, 3), ((0, 0), (1, 1), (1, 1))) if padding == "same" else np.any(x != 0, 3)
    for i in range(3):
        for j in range(3):
            field &= ~nz[:, i:i + g.oh, j:j + g.ow]
    assert field.sum() > 100 and zero_field.sum() >= field.sum()
    np.testing.assert_array_equal(outs[algo][field], np.broadcast_to(want_value, outs[algo][field].shape))
    assert exact[field].all()
    if activation == "relu":  # the ReLU masks agree, so the bias gradients are the same sums
        dy = np.random.default_rng(2).standard_normal(outs["gemm"].shape).astype(np.float32)
        dbs = {}
        for a in ("gemm", algo):
            db = np.zeros(16, np.float32)
            K.conv2d_backward_cpu(x, k, outs[a], dy, grad_bias=db, padding=padding, activation="relu", algorithm=a)
            dbs[a] = db
        np.testing.assert_allclose(dbs[algo], dbs["gemm"], rtol=1e-5, atol=1e-5)

