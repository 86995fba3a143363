"""TensorFlow's N-D gathers and scatters under the runner (tf_scatter_ops.py) against TensorFlow 2.21:
tf.gather_nd (batch_dims), tf.scatter_nd, tf.tensor_scatter_nd_update / add / sub: values, dtypes, shapes,
gradients, symbolic calls in a model, out-of-range indices and TensorFlow-only arguments refused."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402
from flexflow_keras.tf_compat import InvalidArgumentError  # noqa: E402
from tests.flexflow_keras.tf_compare import check_eager_call  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
P = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
T = np.arange(12, dtype=np.float32).reshape(4, 3)


CASES = [
    ("gather_nd", (P, np.array([[0, 1], [1, 2]])), {}), ("gather_nd", (P, [[1, 0, 3]]), {}),
    ("gather_nd", (P, np.array([[[1]], [[0]]], np.int64)), {}), ("gather_nd", (P, [[1], [0]]), {"batch_dims": 1}),
    ("gather_nd", (P, np.array([[[2, 3], [0, 0]], [[1, 1], [2, 0]]])), {"batch_dims": 1}),
    ("gather_nd", (P, np.array([[[1], [0], [3]], [[2], [2], [0]]])), {"batch_dims": 2}),
    ("gather_nd", (np.arange(6, dtype=np.int32).reshape(2, 3), [[1, 2], [0, 0]]), {}),
    ("scatter_nd", ([[1], [3], [1]], np.array([1.0, 2.0, 5.0], np.float32), [5]), {}),
    ("scatter_nd", (np.array([[0, 1], [2, 2]]), np.array([[1, 2], [3, 4]], np.int32), [3, 3, 2]), {}),
    ("scatter_nd", ([[1]], np.ones((1, 3, 4), np.float32), np.array([2, 3, 4])), {}),
    ("tensor_scatter_nd_update", (T, [[0], [2]], np.full((2, 3), -1.0, np.float32)), {}),
    ("tensor_scatter_nd_update", (T, [[0, 1], [3, 2]], np.array([9.0, 8.0], np.float32)), {}),
    ("tensor_scatter_nd_update", ([1.0, 2.0, 3.0], [[1], [1]], [5.0, 6.0]), {}),
    ("tensor_scatter_nd_add", (T, [[0, 1], [0, 1], [1, 0]], np.array([1.0, 2.0, 3.0], np.float32)), {}),
    ("tensor_scatter_nd_sub", (T, [[3]], np.ones((1, 3), np.float32)), {}),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_eager_results_match_tensorflow(case):
    path, args, kwargs = case
    check_eager_call(tf, FFTF, path, args, kwargs)


def _grads(fn_ff, fn_tf, *values):
    vs, tvs = [keras.Variable(v) for v in values], [tf.Variable(v) for v in values]
    with FFTF.GradientTape() as tape:
        loss = FFTF.reduce_sum(FFTF.square(fn_ff(FFTF, *vs)))
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_sum(tf.square(fn_tf(tf, *tvs)))
    for g, tg in zip(tape.gradient(loss, vs), ttape.gradient(tloss, tvs), strict=True):
        np.testing.assert_allclose(np.asarray(g), tf.convert_to_tensor(tg).numpy(), rtol=1e-6)


def test_gradients_match_tensorflow():
    idx, bidx = np.array([[0, 1], [1, 2], [0, 1]]), np.array([[[2, 3]], [[0, 0]]])
    _grads(lambda t, p: t.gather_nd(p, idx), lambda t, p: t.gather_nd(p, idx), P)
    _grads(lambda t, p: t.gather_nd(p, bidx, batch_dims=1), lambda t, p: t.gather_nd(p, bidx, batch_dims=1), P)
    upd = np.arange(6, dtype=np.float32).reshape(2, 3)
    _grads(lambda t, u: t.scatter_nd([[1], [3]], u, [5, 3]), lambda t, u: t.scatter_nd([[1], [3]], u, [5, 3]), upd)
    for fn in ("tensor_scatter_nd_update", "tensor_scatter_nd_add", "tensor_scatter_nd_sub"):
        _grads(lambda t, x, u, fn=fn: getattr(t, fn)(x * 2.0, [[2], [0]], u),
               lambda t, x, u, fn=fn: getattr(t, fn)(x * 2.0, [[2], [0]], u), T, upd)


def test_symbolic_calls_in_a_model(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp, labels = keras.Input((3, 4)), keras.Input((1,), dtype="int32")
    picked = FFTF.gather_nd(inp, FFTF.concat([labels, labels], axis=1), batch_dims=1)
    rows = FFTF.gather_nd(inp[:, 0], labels, batch_dims=1)
    model = keras.Model([inp, labels], [picked, rows])
    x, lab = np.abs(P[:1].repeat(3, 0)) + np.arange(3, dtype=np.float32)[:, None, None], np.array([[0], [2], [1]])
    got = model.predict([x, lab], verbose=0)
    np.testing.assert_array_equal(got[0], tf.gather_nd(x, np.concatenate([lab, lab], 1), batch_dims=1).numpy())
    np.testing.assert_array_equal(got[1], tf.gather_nd(x[:, 0], lab, batch_dims=1).numpy())
    vec = keras.Input((2,), dtype="int32")
    table = FFTF.gather_nd(np.arange(12, dtype=np.float32).reshape(3, 4), vec)
    np.testing.assert_array_equal(keras.Model(vec, table).predict(np.array([[0, 1], [2, 3]]), verbose=0), [1.0, 11.0])


def test_out_of_range_indices_are_tensorflows_error():
    with pytest.raises(InvalidArgumentError, match=r"indices\[0\] = \[0, 5\] does not index into param shape"):
        FFTF.gather_nd(P, [[0, 5]])
    with pytest.raises(InvalidArgumentError, match=r"indices\[1\] = \[-1\]"):
        FFTF.gather_nd(P, [[0], [-1]])
    with pytest.raises(InvalidArgumentError, match=r"indices\[0\] = \[4\] does not index into shape \[3\]"):
        FFTF.scatter_nd([[4]], [1.0], [3])
    with pytest.raises(InvalidArgumentError, match="updates must have shape"):
        FFTF.scatter_nd([[1]], [1.0, 2.0], [3])
    with pytest.raises(InvalidArgumentError, match="integer indices"):
        FFTF.gather_nd(P, [[0.0, 1.0]])


def test_refusals_name_the_call():
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.gather_nd.*bad_indices_policy"):
        FFTF.gather_nd(P, [[0]], bad_indices_policy="IGNORE")
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.gather_nd.*batch_dims=1"):
        FFTF.gather_nd(keras.Input((3, 4)), keras.Input((2,), dtype="int32"))
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.scatter_nd"):
        FFTF.scatter_nd([[0]], keras.Input((3,)), FFTF.shape(keras.Input((3,))))
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.tensor_scatter_nd_update"):
        FFTF.tensor_scatter_nd_update(keras.Input((3,)), [[0]], [[1.0, 2.0, 3.0]])
