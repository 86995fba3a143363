"""keras.ops.dot_product_attention, psnr, histogram and unravel_index (ops/attention_fn.py) against Keras 3 on
TensorFlow: values and dtypes eagerly and in a model, gradients under both tapes and through a graph, and
Keras' errors."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")  # Keras 3 on the TensorFlow backend

from keras_parity import assert_same, assert_same_error, keras_gradient, lambda_model, our_gradient  # noqa: E402

from flexflow_keras import ops  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(5)
Q = rng.standard_normal((2, 5, 4, 8)).astype("float32")
KV = rng.standard_normal((2, 6, 4, 8)).astype("float32")
MASK = rng.random((1, 1, 5, 5)) > 0.3
BIAS = rng.standard_normal((5, 5)).astype("float32")

ATTENTION = {  # fn(K, query): keys and values computed from the query, so a model records them too
    "plain": lambda K, q: K.dot_product_attention(q, K.sin(q), K.cos(q)),
    "grouped": lambda K, q: K.dot_product_attention(q, K.sin(q)[:, :, :2, :], K.cos(q)[:, :, :2, :]),
    "causal": lambda K, q: K.dot_product_attention(q, K.sin(q), K.cos(q), is_causal=True),
    "mask_bias": lambda K, q: K.dot_product_attention(q, K.sin(q), K.cos(q), bias=BIAS, mask=MASK),
    "scale_causal_mask": lambda K, q: K.dot_product_attention(q, K.sin(q), q, scale=0.3, is_causal=True, mask=MASK),
    "self": lambda K, q: K.dot_product_attention(q, q, q, is_causal=True),
    "psnr": lambda K, q: K.psnr(q, q * 0.5 + 0.1, 2.0),
}


@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_values_dtypes_and_graph(name):
    fn = ATTENTION[name]
    assert_same(fn(ops, Q), fn(keras.ops, Q), what=name)
    if name != "psnr":  # a scalar over the whole batch is no per-sample model output
        assert_same(lambda_model(fn, Q.shape[1:])(Q), fn(keras.ops, Q), what=f"{name} in a graph")


def test_dtypes_follow_keras():
    assert_same(ops.dot_product_attention(Q, KV, KV), keras.ops.dot_product_attention(Q, KV, KV))  # S != T
    f64 = [t.astype("float64") for t in (Q, KV, KV)]
    assert_same(ops.dot_product_attention(*f64, is_causal=True), keras.ops.dot_product_attention(*f64, is_causal=True),
                1e-10, 1e-12)
    ints = [t.astype("int32") for t in (Q, KV, KV)]
    assert_same(ops.dot_product_attention(*ints), keras.ops.dot_product_attention(*ints))
    assert_same(ops.psnr(Q.astype("float64"), Q.astype("float64") * 0.9, 1.0),
                keras.ops.psnr(Q.astype("float64"), Q.astype("float64") * 0.9, 1.0), 1e-12, 1e-12)
    a, b = np.arange(6, dtype="int32"), np.zeros(6, "int32")
    assert_same(ops.psnr(a, b, 255), keras.ops.psnr(a, b, 255))


@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_gradients_match_tensorflow(name):
    fn = ATTENTION[name]
    f32 = lambda K, t: fn(K, K.cast(t, "float32"))  # noqa: E731 - the keys and values are float32
    w = rng.standard_normal(np.shape(fn(ops, Q)))
    want = keras_gradient(tf, keras, f32, Q.astype("float64"), w)
    np.testing.assert_allclose(our_gradient(f32, Q.astype("float64"), w), want, rtol=1e-4, atol=1e-5, err_msg=name)
    if name != "psnr":
        got = our_gradient(None, Q, w.astype("float32"), lambda_model(fn, Q.shape[1:]))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{name} in a graph")


COUNTS = {
    "default": lambda K: K.histogram(Q.ravel()),
    "range": lambda K: K.histogram(Q.ravel(), bins=4, range=(-1, 1)),
    "ints": lambda K: K.histogram(np.arange(10), bins=3),
    "float64": lambda K: K.histogram(Q.ravel().astype("float64"), bins=7),
    "unravel": lambda K: K.unravel_index(np.array([5, 3, 0]), (2, 3)),
    "unravel_int32": lambda K: K.unravel_index(np.array([23, 7, 0], "int32"), (4, 2, 3)),
    "unravel_square_scalar": lambda K: K.unravel_index(7, (3, 3)),
}


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_histogram_and_unravel_index_match_keras(name):
    got, want = COUNTS[name](ops), COUNTS[name](keras.ops)
    assert isinstance(got, tuple) and len(got) == len(want)
    assert_same(got, want, what=name)


def test_unravel_index_is_numpy_order_and_symbolic():
    # Keras' TensorFlow backend reverses the dims for a scalar or N-D index (5 in (2, 3) gives (2, 1)); NumPy, JAX
    # and this give (1, 2)
    idx = np.array([[5, 4], [0, 3]])
    for got, want in zip(ops.unravel_index(idx, (2, 3)), np.unravel_index(idx, (2, 3)), strict=True):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == idx.dtype
    model = lambda_model(lambda K, t: K.stack(K.unravel_index(t, (4, 5)), axis=-1), (3,), dtype="int32")
    ids = np.array([[19, 0, 7]], "int32")
    np.testing.assert_array_equal(model(ids), np.stack(np.unravel_index(ids, (4, 5)), -1))


BAD = {
    "rank3": lambda K: K.dot_product_attention(Q[0], KV[0], KV[0]),
    "heads": lambda K: K.dot_product_attention(Q[:, :, :3], KV, KV),
    "flash": lambda K: K.dot_product_attention(Q, KV, KV, flash_attention=True),
    "soft_cap": lambda K: K.dot_product_attention(Q, KV, KV, attn_logits_soft_cap=1.0),
    "psnr_shapes": lambda K: K.psnr(Q, Q[0], 1.0),
    "psnr_dtypes": lambda K: K.psnr(Q.astype("float64"), Q, 1.0),
    "hist_2d": lambda K: K.histogram(Q[0, 0]),
    "hist_bins": lambda K: K.histogram(Q.ravel(), bins=3.0),
    "hist_negative": lambda K: K.histogram(Q.ravel(), bins=-1),
    "hist_range_list": lambda K: K.histogram(Q.ravel(), range=[0, 1]),
    "hist_range_order": lambda K: K.histogram(Q.ravel(), range=(1, 0)),
    "unravel_none": lambda K: K.unravel_index(np.array([1]), (None, 3)),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_errors_match_keras(name):
    assert_same_error(tf, lambda: BAD[name](keras.ops), lambda: BAD[name](ops), name)
