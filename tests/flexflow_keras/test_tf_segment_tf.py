"""tf.math.unsorted_segment_* / segment_* under the runner (tf_segment.py) and keras.ops.segment_* against
TensorFlow 2.21 and Keras 3 on it: values, dtypes, empty segments, dropped ids, ties, and gradients
against tf.GradientTape (eager, and through a symbolic graph); the sorted ops' id checks."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")  # Keras 3 on the TensorFlow backend

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import ops  # noqa: E402
from flexflow_keras.errors import ArgumentError, DataError  # noqa: E402
from flexflow_keras.ops.tape import GradientTape  # noqa: E402
from flexflow_keras.tf_compat import mapped_call  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(4)
X = np.round(rng.standard_normal((9, 3)), 1).astype("float32")
X[1] = X[2]  # ties
X[::4, 0] = 0.0  # zeros
IDS = np.array([0, 2, 2, -1, 0, 2, 4, 0, 2], "int32")
SORTED_IDS = np.array([0, 0, 2, 2, 2, 3, 3, 5, 5], "int32")
DY = rng.standard_normal((6, 3)).astype("float32")
CASES = [(f"unsorted_segment_{fn}", IDS, (6,)) for fn in ("sum", "mean", "max", "min", "prod", "sqrt_n")] + [
    (f"segment_{fn}", SORTED_IDS, ()) for fn in ("sum", "mean", "max", "min", "prod")]


def _ours_with_grad(name, ids, extra):
    fn = mapped_call(f"tf.math.{name}")
    v = ff.Variable(X)
    with GradientTape() as tape:
        y = fn(v, ids, *extra)
        loss = ops.sum(y * DY[: y.shape[0]])
    return np.asarray(y), np.asarray(tape.gradient(loss, v))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_tensorflow(case):
    name, ids, extra = case
    v = tf.Variable(X)
    with tf.GradientTape() as tape:
        want = getattr(tf.math, name)(v, ids, *extra)
        loss = tf.reduce_sum(want * DY[: want.shape[0]])
    got, grad = _ours_with_grad(name, ids, extra)
    assert got.dtype == want.dtype.as_numpy_dtype and got.shape == tuple(want.shape)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)
    np.testing.assert_allclose(grad, tape.gradient(loss, v).numpy(), rtol=1e-5, atol=1e-6)


def test_integers_and_keras_ops_match():
    ints = np.array([1, 2, 4, 7], "int32")
    for name in ("unsorted_segment_sum", "unsorted_segment_mean", "unsorted_segment_max"):
        want = getattr(tf.math, name)(ints, [0, 0, 2, 2], 3).numpy()
        got = np.asarray(mapped_call(f"tf.math.{name}")(ints, np.array([0, 0, 2, 2]), 3))
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    data, seg = X[:, 0], np.array([0, 0, 1, 1, 1, 3, 3, 3, 3])
    for fn in ("segment_sum", "segment_max", "segment_min", "segment_prod"):
        np.testing.assert_allclose(getattr(ops, fn)(data, seg, num_segments=5),
                                   getattr(keras.ops, fn)(data, seg, num_segments=5), rtol=1e-6)
        np.testing.assert_allclose(getattr(ops, fn)(data, seg, sorted=True),
                                   getattr(keras.ops, fn)(data, seg, sorted=True), rtol=1e-6)


def test_symbolic_gradient_matches_tensorflow():
    """unsorted_segment_mean / max inside a model (a constant graph, as keras.io's GNN): one SGD step moves
    the kernel by TensorFlow's gradient of the same loss."""
    w0 = rng.standard_normal((3, 2)).astype("float32")
    idx, target = np.array([0, 2, 4]), rng.standard_normal((3, 2)).astype("float32")
    mean, seg_max = mapped_call("tf.math.unsorted_segment_mean"), mapped_call("tf.math.segment_max")

    class Graph(ff.Model):
        def __init__(self):
            super().__init__()
            self.dense = ff.layers.Dense(2, use_bias=False, kernel_initializer=ff.initializers.Constant(w0))

        def call(self, i):
            h = self.dense(X)
            return ops.take(mean(h, IDS, 6) + seg_max(h, SORTED_IDS), i, axis=0)

    model = Graph()
    model.compile(ff.optimizers.SGD(0.5), "mse")
    model.fit(idx, target, epochs=1, batch_size=3, verbose=0)
    w = tf.Variable(w0)
    with tf.GradientTape() as tape:
        h = X @ w
        out = tf.gather(tf.math.unsorted_segment_mean(h, IDS, 6) + tf.math.segment_max(h, SORTED_IDS), idx)
        loss = tf.reduce_mean((out - target) ** 2)
    np.testing.assert_allclose(model.get_weights()[0], w0 - 0.5 * tape.gradient(loss, w).numpy(), rtol=1e-5,
                               atol=1e-6)


def test_sorted_ids_checked():
    seg_sum = mapped_call("tf.math.segment_sum")
    with pytest.raises(DataError, match=r"not increasing \(position 1: 0 after 1\)"):
        seg_sum(X[:3], np.array([1, 0, 0]))
    with pytest.raises(DataError, match="must be >= 0"):
        seg_sum(X[:3], np.array([-1, 0, 0]))
    with pytest.raises(ArgumentError, match="unsorted_segment_sum"):
        seg_sum(ff.Input((3,)), ff.Input((), dtype="int32"))


def test_python_lists_convert_as_tensorflow_converts_them():
    for name, args in [("segment_sum", ([1.0, 2.0], [0, 0])), ("unsorted_segment_sum", ([1.0, 2.0], [0, 1], 2)),
                       ("unsorted_segment_max", ([1, 2], [1, 1], 2))]:
        want, got = getattr(tf.math, name)(*args), mapped_call(f"tf.math.{name}")(*args)
        assert np.asarray(got).dtype == want.dtype.as_numpy_dtype, name
        np.testing.assert_array_equal(np.asarray(got), want.numpy())
