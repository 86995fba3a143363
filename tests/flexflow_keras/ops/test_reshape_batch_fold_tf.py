"""A reshape may fold blocks of each sample into the batch dim and unfold them again, as keras.io's Swin
Transformer partitions an image into windows (``(B, 8, 8, C)`` to ``(-1, 4, 4, C)``: ``(B*4, 4, 4, C)``),
runs attention per window and puts the windows back. It was refused ("reshape keeps the batch dim and
cannot merge it with other dims"). The folded tensor counts 4 rows per sample (`batch_scale`): it is
sized 4 times the batch, split by whole samples, and training matches tf.keras, on one processor and on two."""

import numpy as np
import pytest

import flexflow_keras
from flexflow_keras import config
from flexflow_keras.errors import ShapeError

RS = np.random.RandomState(0)
X = RS.randn(30, 8, 8, 4).astype("float32")  # 30 samples: the last batch of 8 holds 6
Y = RS.randint(0, 3, 30)
MASK = np.where(RS.rand(4, 1, 16, 16) > 0.7, -100.0, 0.0).astype("float32")  # one mask per window, as Swin's


def _model(lib):
    ops, layers = lib.ops, lib.layers
    inp = lib.Input((8, 8, 4))
    x = ops.reshape(inp, (-1, 2, 4, 2, 4, 4))
    x = ops.transpose(x, (0, 1, 3, 2, 4, 5))
    w = ops.reshape(x, (-1, 16, 4))  # (B*4, 16, 4): the windows
    w = layers.LayerNormalization()(w)
    q = layers.Dense(8)(w)
    k = layers.Dense(8)(w)
    att = ops.matmul(q, ops.transpose(k, (0, 2, 1)))  # (B*4, 16, 16)
    att = ops.reshape(att, (-1, 4, 16, 16)) + MASK[:, 0]  # unfolded, one mask per window
    att = ops.softmax(ops.reshape(att, (-1, 16, 16)), axis=-1)  # folded again
    w = ops.matmul(att, layers.Dense(6, activation="gelu")(w))
    w = ops.reshape(w, (-1, 2, 2, 4, 4, 6))  # (B, 2, 2, 4, 4, 6): windows back in place
    w = ops.reshape(ops.transpose(w, (0, 1, 3, 2, 4, 5)), (-1, 8, 8, 6))
    out = layers.Dense(3, activation="softmax")(layers.GlobalAveragePooling2D()(w))
    m = lib.Model(inp, out)
    rs = np.random.RandomState(1)
    m.set_weights([rs.randn(*v.shape).astype("float32") * 0.5 for v in m.get_weights()])
    return m


def _run(lib, degree=None):
    if degree is not None:
        config.reset()
        config.set(cpus=2, data_parallel_degree=degree)
    m = _model(lib)
    m.compile(lib.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=["accuracy"])
    hist = m.fit(X, Y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    return hist.history["loss"], m.evaluate(X, Y, batch_size=8, verbose=0), m.predict(X, batch_size=8, verbose=0)


def test_the_folded_tensor_counts_rows_per_sample():
    inp = flexflow_keras.Input((8, 8, 4))
    w = flexflow_keras.ops.reshape(inp, (-1, 4, 4, 4))
    assert w.shape == (None, 4, 4, 4) and w.batch_scale == 4
    back = flexflow_keras.ops.reshape(w, (-1, 8, 8, 4))
    assert back.batch_scale == 1


def test_one_and_two_processors_train_alike():
    loss1, ev1, p1 = _run(flexflow_keras, 1)
    loss2, ev2, p2 = _run(flexflow_keras, 2)
    np.testing.assert_allclose(loss2, loss1, rtol=1e-5)
    np.testing.assert_allclose(ev2, ev1, rtol=1e-5)
    np.testing.assert_allclose(p2, p1, rtol=1e-5, atol=1e-6)


def test_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _run(flexflow_keras, 1), _run(keras)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-5)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=2e-5)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-4, atol=1e-6)


def test_a_folded_output_predicts_its_rows_but_cannot_meet_labels():
    inp = flexflow_keras.Input((8, 8, 4))
    m = flexflow_keras.Model(inp, flexflow_keras.ops.reshape(inp, (-1, 16, 4)))
    got = m.predict(X[:10], verbose=0)
    np.testing.assert_array_equal(got, X[:10].reshape(40, 16, 4))  # as tf.keras: 4 rows per sample
    m.compile("sgd", "mse")
    with pytest.raises(ShapeError, match="4 rows per sample"):
        m.fit(X[:10], np.zeros((10, 16, 4), "float32"), verbose=0)


def test_rows_of_different_samples_are_never_joined():
    inp = flexflow_keras.Input((8, 8, 4))
    with pytest.raises(ShapeError, match="merge samples"):
        flexflow_keras.ops.reshape(inp, (-1, 512))
    w = flexflow_keras.ops.reshape(inp, (-1, 16, 4))  # 4 rows per sample
    other = flexflow_keras.Input((16, 4))  # 1 row per sample, the same row shape
    with pytest.raises(ShapeError, match="count their batch rows differently"):
        flexflow_keras.ops.add(w, other)


def test_the_batch_size_of_another_tensor_gives_its_rows():
    """``ops.reshape(w, (ops.shape(x)[0], -1))``: the rows of x (one per sample), not of w (four)."""
    ops = flexflow_keras.ops
    inp = flexflow_keras.Input((8, 8, 4))
    w = ops.reshape(inp, (-1, 16, 4))
    back = ops.reshape(w, (ops.shape(inp)[0], -1))
    assert back.shape == (None, 256) and back.batch_scale == 1
    same = ops.reshape(w, (ops.shape(w)[0], -1))
    assert same.shape == (None, 64) and same.batch_scale == 4
    m = flexflow_keras.Model(inp, [back, same])
    a, b = m.predict(X[:5], verbose=0)
    np.testing.assert_array_equal(a, X[:5].reshape(5, 256))
    np.testing.assert_array_equal(b, X[:5].reshape(20, 64))


def test_the_memory_bound_counts_folded_rows():
    """store_budget's per-sample bound (the estimate that decides which stores to drop) counts a folded
    tensor's k rows per sample: it stays above what the store's activations and gradients take."""
    from flexflow_keras.execution.store_budget import graph_bytes_per_sample

    config.reset()
    m = _model(flexflow_keras)
    m.compile("sgd", "sparse_categorical_crossentropy")
    m.fit(X[:8], Y[:8], batch_size=8, epochs=1, verbose=0)
    engine = m._engine
    store = engine._stores[8]
    taken = sum(int(np.prod(r.shape)) * r.dtype.itemsize for table in (store.acts, store.grads)
                for r in table.values() if r.shape and r.shape[0] in (8, 32))
    assert graph_bytes_per_sample(engine) * 8 >= taken


def test_open_rows_of_folded_blocks_are_refused():
    """A sequence of unknown length folded by ``reshape(x, (-1, 4))`` (the graph is recorded again at the data's
    length) then reshaped to (-1, -1, 4) cannot tell its rows: a ShapeError, where the rows were silently kept
    ((30, 1, 3) where TensorFlow gives (6, 5, 3))."""
    ops = flexflow_keras.ops
    x = flexflow_keras.Input((None, 4))
    flat = ops.reshape(x, (-1, 4))
    m = flexflow_keras.Model(x, flexflow_keras.layers.Dense(3)(ops.reshape(flat, (ops.shape(x)[0], -1, 4))))
    with pytest.raises(ShapeError, match="rows cannot be told"):
        m.predict(np.zeros((6, 5, 4), "float32"), verbose=0)
