"""SegmentReduceOp (ops/segment.py, kernels/segment.py) against loop-by-loop NumPy float64 references:
every mode forward and backward (numerical gradients, TensorFlow's tie and zero rules written out), empty
segments, dropped negative ids, bad ids, feature tiles, the parallel rules, and keras.ops.segment_* eager,
under a GradientTape and inside a trained model."""

import numpy as np
import pytest
from op_harness import check_op, run_backward, run_forward, specs

import flexflow_keras as keras
from flexflow_keras import config, ops
from flexflow_keras.errors import DataError, ShapeError, StrategyError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.base import KernelContext
from flexflow_keras.ops.segment import SegmentReduceOp
from flexflow_keras.ops.tape import GradientTape

RNG = np.random.default_rng(5)
IDS = np.array([2, 0, 2, -1, 0, 2, 4])  # segment 1 and 3 empty, one row dropped


def reference(fn, x, ids, n, empty_zero=False):
    """y[s] by a loop over the rows (float64)."""
    rows = x.reshape(ids.size, -1)
    out = []
    for s in range(n):
        got = rows[ids.reshape(-1) == s]
        if not len(got):
            lowest = -np.finfo(x.dtype).max if fn == "max" else np.finfo(x.dtype).max
            out.append(np.full(rows.shape[1], 1.0 if fn == "prod" else
                               lowest if fn in ("max", "min") and not empty_zero else 0.0))
            continue
        red = {"sum": got.sum(0), "mean": got.mean(0), "sqrt_n": got.sum(0) / np.sqrt(len(got)),
               "max": got.max(0), "min": got.min(0), "prod": got.prod(0)}[fn]
        out.append(red)
    return np.array(out).reshape((n,) + x.shape[ids.ndim:])


@pytest.mark.parametrize("fn", ["sum", "mean", "sqrt_n", "max", "min", "prod"])
def test_forward_and_numerical_gradient(fn):
    x = RNG.standard_normal((7, 3)) + (2.0 if fn == "prod" else 0.0)  # distinct values: max / min differentiable
    ez = fn in ("max", "min")  # empty segments 0, not the lowest float (whose products overflow the check)
    check_op(SegmentReduceOp(fn, 5, ez), [x, IDS], ref=lambda x, i: reference(fn, x, i, 5, ez), grad_rtol=1e-5)


def test_ids_of_two_dims_and_trailing_dims():
    x, ids = RNG.standard_normal((2, 3, 2, 2)), np.array([[0, 1, 1], [2, 0, -1]])
    check_op(SegmentReduceOp("mean", 3), [x, ids], ref=lambda x, i: reference("mean", x, i, 3))


def _grad(fn, x, ids, n, dy):
    outs, saved, stats, _ = run_forward(SegmentReduceOp(fn, n), [x, ids], [])
    gin, _ = run_backward(SegmentReduceOp(fn, n), [x, ids], [], outs, saved, stats, [dy])
    return outs[0], gin[0]


def test_max_min_split_gradient_between_ties():
    x = np.array([[1.0, 5.0], [1.0, 5.0], [0.0, 5.0], [3.0, -1.0]])
    ids, dy = np.array([0, 0, 0, 1]), np.array([[6.0, 3.0], [2.0, 4.0]])
    y, dx = _grad("max", x, ids, 2, dy)
    np.testing.assert_array_equal(y, [[1.0, 5.0], [3.0, -1.0]])
    np.testing.assert_array_equal(dx, [[3.0, 1.0], [3.0, 1.0], [0.0, 1.0], [2.0, 4.0]])
    _, dx = _grad("min", x, ids, 2, dy)
    np.testing.assert_array_equal(dx, [[0.0, 1.0], [0.0, 1.0], [6.0, 1.0], [2.0, 4.0]])


def test_prod_gradient_at_zeros():
    x = np.array([[0.0, 2.0], [3.0, 0.0], [0.0, 4.0], [5.0, 0.0], [7.0, 1.0]])
    ids, dy = np.array([0, 0, 0, 1, 1]), np.ones((2, 2))
    y, dx = _grad("prod", x, ids, 2, dy)
    np.testing.assert_array_equal(y, [[0.0, 0.0], [35.0, 0.0]])
    # segment 0, column 0 holds two zeros: no gradient; one zero: the product of the others
    np.testing.assert_array_equal(dx, [[0.0, 0.0], [0.0, 8.0], [0.0, 0.0], [7.0, 1.0], [5.0, 0.0]])


def test_empty_segments_and_sorted_rule():
    x = RNG.standard_normal((7, 2)).astype("float32")
    y = run_forward(SegmentReduceOp("max", 5), [x, IDS], [])[0][0]
    assert y[1, 0] == np.finfo(np.float32).min and y.dtype == np.float32
    y0 = run_forward(SegmentReduceOp("min", 5, empty_zero=True), [x, IDS], [])[0][0]
    np.testing.assert_array_equal(y0[[1, 3]], 0)
    np.testing.assert_allclose(y0, reference("min", x, IDS, 5, empty_zero=True))


def test_bad_id_names_position_and_value():
    with pytest.raises(DataError, match=r"segment id 9 at flat position 1, outside \[0, 3\)"):
        ops.segment_sum(np.ones((3, 2), "float32"), np.array([0, 9, 1]), num_segments=3)


def test_shape_errors():
    with pytest.raises(ShapeError, match="integer segment_ids"):
        ops.segment_sum(np.ones(3), np.array([0.0, 1.0, 1.0]))
    with pytest.raises(ShapeError, match=r"must start with the shape of segment_ids \(2,\)"):
        ops.segment_sum(np.ones((3, 2)), np.array([0, 1]))
    ids = keras.Input((), dtype="int32")
    with pytest.raises(ShapeError, match="needs num_segments"):
        ops.segment_sum(keras.Input((4,)), ids)


def test_parallel_rules_and_feature_tiles():
    op, x, ids = SegmentReduceOp("max", 5), RNG.standard_normal((7, 4)), IDS
    space = op.parallel_space(specs([x, ids]), [])
    space.check_degree("seg", 1, 4)
    with pytest.raises(StrategyError, match="read every row of data"):
        space.check_degree("seg", 0, 2)
    with pytest.raises(StrategyError, match="reduce=2"):
        space.check_reduce("seg", 2)
    outs, saved, stats, _ = run_forward(op, [x, ids], [])
    dy = RNG.standard_normal(outs[0].shape)
    whole_dx = run_backward(op, [x, ids], [], outs, saved, stats, [dy])[0][0]
    shapes = par.TileShapes((x.shape, ids.shape), (), (outs[0].shape,))
    got, got_dx = np.full(outs[0].shape, np.nan), np.full(x.shape, np.nan)
    for box in par.tile_boxes(outs[0].shape, (1, 3)):
        tile = op.tile(shapes, box)
        (lo, hi), ids_box = tile.inputs
        assert ids_box == par.whole(ids.shape) and (lo[0], hi[0]) == (0, 7)
        xs = x[:, lo[1]:hi[1]].copy()
        o = np.empty((5, hi[1] - lo[1]))
        ctx = KernelContext(tile=tile)
        op.forward(ctx, [xs, ids], [], [o], [], [])
        dx = np.empty_like(xs)
        op.backward(ctx, [xs, ids], [], [o], [], [], [dy[:, lo[1]:hi[1]].copy()], [dx, None], [])
        got[:, lo[1]:hi[1]], got_dx[:, lo[1]:hi[1]] = o, dx
    np.testing.assert_array_equal(got, outs[0])
    np.testing.assert_array_equal(got_dx, whole_dx)


def test_keras_ops_eager_and_tape():
    data, ids = np.array([1, 2, 10, 20, 100, 200]), np.array([0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(ops.segment_sum(data, ids), [3, 30, 300])
    np.testing.assert_array_equal(ops.segment_max(data, ids, num_segments=3), [2, 20, 200])
    np.testing.assert_array_equal(ops.segment_min(data, ids, 3, sorted=True), [1, 10, 100])
    np.testing.assert_array_equal(ops.segment_prod(data, ids), [2, 200, 20000])
    v = keras.Variable(np.array([[1.0], [4.0], [2.0]], "float32"))
    with GradientTape() as tape:
        loss = ops.sum(ops.segment_max(v, np.array([0, 0, 1]), 2) * np.array([[3.0], [5.0]], "float32"))
    np.testing.assert_array_equal(tape.gradient(loss, v), [[0.0], [3.0], [5.0]])


def test_in_a_model_aggregates_and_trains():
    """A subclassed model whose call() aggregates edge messages of a constant graph by segment_sum (the
    shape of keras.io's GNN examples): predictions equal the eager computation, and training lowers the loss."""
    rng = np.random.default_rng(0)
    nodes = rng.standard_normal((12, 3)).astype("float32")
    edges = rng.integers(0, 12, (2, 20))

    class Graph(keras.Model):
        def __init__(self):
            super().__init__()
            self.message = keras.layers.Dense(4, activation="relu")
            self.out = keras.layers.Dense(2)

        def call(self, idx):
            m = self.message(ops.take(nodes, edges[1], axis=0))
            x = ops.segment_sum(m, edges[0], num_segments=12) + ops.segment_max(m, edges[0], 12, sorted=True)
            return self.out(ops.take(x, idx, axis=0))

    model = Graph()
    model.compile(keras.optimizers.Adam(0.05), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    idx, labels = np.arange(12), (nodes[:, 0] > 0).astype("int32")
    got = model.predict(idx, verbose=0)
    w = [v.numpy() for v in model.weights]
    m = np.maximum(nodes[edges[1]] @ w[0] + w[1], 0)
    agg = reference("sum", m, edges[0], 12) + reference("max", m, edges[0], 12, empty_zero=True)
    np.testing.assert_allclose(got, agg @ w[2] + w[3], rtol=1e-5, atol=1e-5)
    hist = model.fit(idx, labels, epochs=8, batch_size=12, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]


@pytest.mark.parametrize("degree", [1, 2])
def test_batch_after_the_rows_in_a_model(degree, request):
    """keras.io's traffic forecasting: node features transposed to (nodes, batch, time, feat), the messages
    of each node's edges gathered and averaged by tf.math.unsorted_segment_mean. The data's trailing dims
    hold the batch; it was refused ("needs known dims after its rows"). Predictions and one SGD step
    equal the NumPy computation, on one shard and with the batch split in two."""
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=degree)
    rng = np.random.default_rng(1)
    edges = np.array([[0, 0, 1, 2, 2, 3], [1, 2, 0, 0, 3, 2]])
    x = rng.standard_normal((8, 5, 4, 1)).astype("float32")  # (batch, time, nodes, feat)
    y = rng.standard_normal((8, 4)).astype("float32")

    inp = keras.Input((5, 4, 1))
    h = ops.transpose(inp, (2, 0, 1, 3))  # (nodes, batch, time, feat)
    agg = ops.segment_sum(ops.take(h, edges[1], axis=0), edges[0], num_segments=4)
    out = ops.transpose(ops.sum(agg, axis=(2, 3)), (1, 0))  # (batch, nodes)
    model = keras.Model(inp, keras.layers.Dense(4, kernel_initializer="ones")(out))
    model.compile(keras.optimizers.SGD(0.01), "mse")

    def forward(w, b):
        node = x.sum(axis=(1, 3))  # (batch, nodes)
        feats = np.zeros_like(node)
        for s, t in edges.T:
            feats[:, s] += node[:, t]
        return feats, feats @ w + b

    w, b = (v.numpy() for v in model.weights)
    feats, pred = forward(w, b)
    np.testing.assert_allclose(model.predict(x, verbose=0), pred, rtol=1e-5, atol=1e-5)
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    grad = 2 * (pred - y) / y.size
    np.testing.assert_allclose(model.weights[0].numpy(), w - 0.01 * feats.T @ grad, rtol=1e-5, atol=1e-5)
