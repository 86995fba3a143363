"""TensorFlow's math and tf.nn functions under the runner (tf_math_ops.py) against TensorFlow 2.21: scans
with TensorFlow's default axis 0 (exclusive, reverse), count_nonzero's int64, reduce_any / all / logsumexp,
is_nan & co, divide_no_nan, rsqrt, round (half to even), norm, clip_by_norm, the trig functions, l2_loss,
bias_add, the softmax cross-entropies, dropout's scaling; symbolic calls in a model and a gradient."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402
from flexflow_keras.ops.eager_tensor import EagerTensor  # noqa: E402
from tests.flexflow_keras.tf_compare import check_eager_call, tf_function  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
X = np.array([[3.0, -1.0, 2.0, 0.0], [0.5, 4.0, -3.0, 0.0], [1.0, 1.0, 7.0, -2.0]], np.float32)
INTS = np.array([[1, 0, 2], [0, 0, 5]], np.int32)
NAN = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
LOGITS = np.array([[2.0, 1.0, 0.1], [0.3, -1.0, 2.5]], np.float32)
PROBS = np.array([[0.7, 0.2, 0.1], [0.0, 0.0, 1.0]], np.float32)


CASES = [
    ("cumsum", (X,), {}), ("math.cumsum", (X, 1), {}), ("cumsum", (X,), {"axis": 1, "exclusive": True}),
    ("cumsum", (X,), {"axis": 0, "reverse": True}), ("cumsum", (X, 1), {"exclusive": True, "reverse": True}),
    ("cumsum", (INTS,), {}), ("math.cumprod", (X,), {}), ("math.cumprod", (X, 1), {"exclusive": True}),
    ("math.cumprod", (X, -1), {"exclusive": True, "reverse": True}),
    ("math.count_nonzero", (X,), {}), ("math.count_nonzero", (X,), {"axis": 1}),
    ("math.count_nonzero", (INTS, 0), {"keepdims": True}),
    ("reduce_any", (X > 2,), {}), ("reduce_any", (X > 2, 1), {}), ("math.reduce_all", (X > -5,), {"axis": 0}),
    ("reduce_all", (X > 0,), {"keepdims": True}), ("reduce_logsumexp", (X,), {}),
    ("math.reduce_logsumexp", (X, 1), {"keepdims": True}),
    ("math.is_nan", (NAN,), {}), ("math.is_inf", (NAN,), {}), ("math.is_finite", (NAN,), {}),
    ("math.divide_no_nan", (X, np.array([2.0, 0.0, 4.0, 0.0], np.float32)), {}),
    ("math.rsqrt", (np.abs(X) + 1,), {}), ("round", (np.array([0.5, 1.5, 2.5, -0.5, 1.2, -2.7], np.float32),), {}),
    ("math.round", (X * 0.75,), {}),
    ("norm", (X,), {}), ("linalg.norm", (X,), {"axis": 1}), ("norm", (X,), {"ord": 1, "axis": 0}),
    ("norm", (X,), {"ord": np.inf, "axis": -1, "keepdims": True}), ("norm", (X,), {"ord": "fro", "axis": [0, 1]}),
    ("norm", (X,), {"axis": [-2, -1], "keepdims": True}), ("norm", (X,), {"ord": 1}),
    ("norm", (X,), {"ord": 1, "axis": [0, 1]}), ("norm", (X,), {"ord": np.inf, "axis": [0, 1]}),
    ("norm", (X,), {"ord": 1, "axis": [1, 0]}), ("linalg.norm", (X,), {"ord": np.inf, "axis": [-1, -2]}),
    ("norm", (np.stack([X, -2 * X]),), {"ord": 1, "axis": [-2, -1], "keepdims": True}),
    ("norm", (np.stack([X, -2 * X]),), {"ord": np.inf, "axis": [1, 2]}),
    ("round", (INTS,), {}), ("math.rsqrt", (np.array([4.0, 0.0], np.float32),), {}),
    ("clip_by_norm", (X, 2.0), {}), ("clip_by_norm", (X, 2.0), {"axes": [1]}), ("clip_by_norm", (X, 100.0), {}),
    ("math.log_sigmoid", (X,), {}), ("math.atan2", (X, X[::-1]), {}), ("atan2", (X, np.ones_like(X)), {}),
    ("math.atan", (X,), {}), ("math.asin", (X / 8,), {}), ("math.acos", (X / 8,), {}), ("math.sinh", (X,), {}),
    ("math.cosh", (X,), {}), ("math.logical_xor", (X > 0, X < 2), {}),
    ("nn.l2_loss", (X,), {}), ("nn.bias_add", (X, np.arange(4, dtype=np.float32)), {}),
    ("nn.bias_add", (np.ones((2, 3, 2, 2), np.float32), np.arange(3, dtype=np.float32)), {"data_format": "NCHW"}),
    ("nn.softmax_cross_entropy_with_logits", (), {"labels": PROBS, "logits": LOGITS}),
    ("nn.softmax_cross_entropy_with_logits", (PROBS.T, LOGITS.T), {"axis": 0}),
    ("nn.sparse_softmax_cross_entropy_with_logits", (), {"labels": np.array([0, 2]), "logits": LOGITS}),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_eager_results_match_tensorflow(case):
    path, args, kwargs = case
    check_eager_call(tf, FFTF, path, args, kwargs, rtol=1e-5, atol=1e-6)


def test_dropout_zeroes_and_scales_as_tensorflow():
    x = np.ones((200, 50), np.float32)
    got = FFTF.nn.dropout(x, 0.3, seed=1).numpy()
    assert set(np.unique(got)) <= {0.0, np.float32(1 / 0.7)} and abs((got == 0).mean() - 0.3) < 0.02
    want = tf.nn.dropout(x, 0.3, seed=1).numpy()
    assert set(np.unique(want)) == set(np.unique(got))  # the same values (which entries drop is random)


def test_random_truncated_normal_and_shuffle():
    draws = FFTF.random.truncated_normal((20000,), mean=1.0, stddev=2.0, seed=3).numpy()
    assert draws.dtype == np.float32 and draws.min() >= -3.0 and draws.max() <= 5.0
    rows = FFTF.random.shuffle(X, seed=2).numpy()
    assert sorted(map(tuple, rows)) == sorted(map(tuple, X))


def test_cumsum_and_count_nonzero_are_differentiated():
    v, tv = keras.Variable(X), tf.Variable(X)
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    with FFTF.GradientTape() as tape:
        loss = FFTF.reduce_sum(FFTF.cumsum(v, axis=1, exclusive=True, reverse=True) * w)
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_sum(tf.cumsum(tv, axis=1, exclusive=True, reverse=True) * w)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v)), ttape.gradient(tloss, tv).numpy())


def test_symbolic_calls_in_a_model(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp = keras.Input((4,))
    outs = [FFTF.cumsum(inp, axis=1, exclusive=True), FFTF.cast(FFTF.math.count_nonzero(inp, axis=1), "float32"),
            FFTF.norm(inp, axis=1), FFTF.clip_by_norm(inp, 1.0, axes=[1]), FFTF.math.reduce_logsumexp(inp, 1),
            FFTF.norm(FFTF.reshape(inp, (-1, 2, 2)), ord=1, axis=[1, 2]),
            FFTF.norm(FFTF.reshape(inp, (-1, 2, 2)), ord=np.inf, axis=[-2, -1])]
    model = keras.Model(inp, outs)
    wants = [tf.cumsum(X, axis=1, exclusive=True), tf.cast(tf.math.count_nonzero(X, axis=1), "float32"),
             tf.norm(X, axis=1), tf.clip_by_norm(X, 1.0, axes=[1]), tf.math.reduce_logsumexp(X, 1),
             tf.norm(X.reshape(-1, 2, 2), ord=1, axis=[1, 2]), tf.norm(X.reshape(-1, 2, 2), ord=np.inf, axis=[-2, -1])]
    for got, want in zip(model.predict(X, verbose=0), wants, strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)


def test_tensorflow_only_arguments_are_refused():
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.math.count_nonzero"):
        FFTF.math.count_nonzero(X, reduction_indices=[0])
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.norm"):
        FFTF.norm(X, ord="fro", axis=1)


def test_python_lists_convert_as_tensorflow_converts_them():
    for path, args in [("cumsum", ([1.0, 2.0, 3.0],)), ("cumsum", ([1, 2, 3],)), ("math.count_nonzero", ([0, 1, 2],)),
                       ("reduce_any", ([True, False],)), ("math.is_nan", ([1.0, 2.0],)), ("norm", ([3.0, 4.0],)),
                       ("clip_by_norm", ([3.0, 4.0], 1.0)), ("nn.l2_loss", ([1.0, 2.0],)), ("round", ([0.5, 1.5],)),
                       ("math.divide_no_nan", ([1.0, 2.0], [0.0, 4.0])), ("round", ([1, 2],)),
                       ("nn.bias_add", (np.ones((1, 2, 2), np.float32), [1.0, 2.0])),
                       ("nn.bias_add", ([[1.0, 2.0]], [1.0, 2.0])),
                       ("nn.softmax_cross_entropy_with_logits", ([[0.0, 1.0]], [[1.0, 2.0]])),
                       ("nn.sparse_softmax_cross_entropy_with_logits", ([1], [[1.0, 2.0]]))]:
        want, got = tf_function(tf, path)(*args), tf_function(FFTF, path)(*args)
        assert got.numpy().dtype == want.dtype.as_numpy_dtype, path
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_batch_normalization_matches_tensorflow(request):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7.0
    mean, var = tf.nn.moments(x, axes=[0, 1])
    args = [(x, mean.numpy(), var.numpy(), np.ones(4, np.float32) * 0.5, np.arange(4, dtype=np.float32), 1e-3),
            (x, 1.0, 4.0, None, None, 1e-3), (x, mean.numpy(), var.numpy(), 0.25, None, 0.1)]
    for a in args:
        got, want = FFTF.nn.batch_normalization(*a), tf.nn.batch_normalization(*a)
        assert isinstance(got, EagerTensor) and got.numpy().dtype == want.dtype.as_numpy_dtype
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    v, tv = keras.Variable(x), tf.Variable(x)
    with FFTF.GradientTape() as tape:
        m, s = FFTF.nn.moments(v, axes=[0, 1])
        loss = FFTF.reduce_sum(FFTF.nn.batch_normalization(v, m, s, 0.5, 2.0, 1e-3) * x)
    with tf.GradientTape() as ttape:
        tm, ts = tf.nn.moments(tv, axes=[0, 1])
        tloss = tf.reduce_sum(tf.nn.batch_normalization(tv, tm, ts, 0.5, 2.0, 1e-3) * x)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v)), ttape.gradient(tloss, tv).numpy(), rtol=1e-4,
                               atol=1e-5)
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp = keras.Input((4,))
    out = FFTF.nn.batch_normalization(inp, mean.numpy(), var.numpy(), 0.5, 2.0, 1e-3)
    np.testing.assert_allclose(keras.Model(inp, out).predict(X, verbose=0),
                               tf.nn.batch_normalization(X, mean, var, 0.5, 2.0, 1e-3).numpy(), rtol=1e-5, atol=1e-6)


def test_clip_by_global_norm_matches_tensorflow():
    grads = [X, None, np.arange(3, dtype=np.float32)]
    for clip, use_norm in ((1.0, None), (100.0, None), (2.0, np.float32(4.0))):
        got, got_norm = FFTF.clip_by_global_norm(grads, clip, use_norm=use_norm)
        want, want_norm = tf.clip_by_global_norm(grads, clip, use_norm=use_norm)
        assert isinstance(got, list) and got[1] is None and len(got) == 3
        np.testing.assert_allclose(np.asarray(got_norm), np.asarray(want_norm), rtol=1e-6)
        assert np.asarray(got_norm).dtype == np.asarray(want_norm).dtype
        for g, w in ((got[0], want[0]), (got[2], want[2])):
            assert g.numpy().dtype == w.dtype.as_numpy_dtype
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(FFTF.linalg.global_norm(grads)), tf.linalg.global_norm(grads).numpy(),
                               rtol=1e-6)
    with np.errstate(invalid="ignore"):  # inf - inf: the NaN TensorFlow gives an infinite norm
        clipped, norm = FFTF.clip_by_global_norm([np.array([np.inf, 1.0], np.float32)], 1.0)
    assert np.isinf(np.asarray(norm)) and np.isnan(np.asarray(clipped[0])).all()  # as TensorFlow's
    with pytest.raises(TypeError, match="list of tensors"):
        FFTF.clip_by_global_norm(X, 1.0)
    v, tv = keras.Variable(X), tf.Variable(X)
    with FFTF.GradientTape() as tape:
        loss = FFTF.reduce_sum(FFTF.clip_by_global_norm([v * 2.0], 3.0)[0][0] * X)
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_sum(tf.clip_by_global_norm([tv * 2.0], 3.0)[0][0] * X)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v)), ttape.gradient(tloss, tv).numpy(), rtol=1e-5,
                               atol=1e-6)


def test_rsqrt_of_zero_is_inf_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = FFTF.math.rsqrt([4.0, 0.0])
    np.testing.assert_array_equal(got.numpy(), tf.math.rsqrt([4.0, 0.0]).numpy())


TOP_LEVEL_TOO = [
    ("acos", (X / 8,), {}), ("asin", (X / 8,), {}), ("atan", (X,), {}), ("sinh", (X,), {}), ("cosh", (X,), {}),
    ("asinh", (X,), {}), ("math.asinh", (X,), {}), ("acosh", (np.abs(X) + 1,), {}),
    ("math.acosh", (np.abs(X) + 1,), {}), ("atanh", (X / 8,), {}), ("math.atanh", (X / 8,), {}),
    ("math.expm1", (X,), {}), ("math.erfinv", (X / 8,), {}),
    ("math.rint", (np.array([0.5, 1.5, 2.5, -0.5, 1.2, -2.7], np.float32),), {}),
    ("math.reduce_euclidean_norm", (X,), {}), ("math.reduce_euclidean_norm", (X, 1), {"keepdims": True}),
    ("scalar_mul", (2.5, X), {}), ("math.scalar_mul", (-1.0, X), {}), ("realdiv", (X, X + 10), {}),
]


@pytest.mark.parametrize("case", TOP_LEVEL_TOO, ids=[f"{c[0]}-{i}" for i, c in enumerate(TOP_LEVEL_TOO)])
def test_top_level_trig_and_more_math_names_match_tensorflow(case):
    """tf.acos & co exist at the top level as well as under tf.math (keras.io's DDIM calls tf.acos in its
    diffusion schedule; the runner refused it as raw TensorFlow)."""
    path, args, kwargs = case
    check_eager_call(tf, FFTF, path, args, kwargs, rtol=1e-5, atol=1e-6)


def test_tf_acos_in_a_tape_and_a_model(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    v, tv = keras.Variable(X / 8), tf.Variable(X / 8)
    with FFTF.GradientTape() as tape:
        loss = FFTF.reduce_sum(FFTF.acos(v) * FFTF.atanh(v))
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_sum(tf.acos(tv) * tf.atanh(tv))
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v)), ttape.gradient(tloss, tv).numpy(), rtol=1e-5)
    inp = keras.Input((4,))
    model = keras.Model(inp, FFTF.math.reduce_euclidean_norm(FFTF.asinh(inp), axis=1))
    np.testing.assert_allclose(model.predict(X, verbose=0), tf.math.reduce_euclidean_norm(tf.asinh(X), 1).numpy(),
                               rtol=1e-5)
