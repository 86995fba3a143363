"""Ops that read the batch size count a folded tensor's rows (k per sample after a reshape folded k blocks
of each sample into the batch dim), as TensorFlow's shape of that tensor gives them: ops.shape(w)[0] as a
value (BatchSizeOp) and ActivityRegularization's division by ops.shape(x)[0]. Both read the step's sample
count: ops.shape(w)[0] of (B*4, 64) windows gave B (4 where tf.keras gives 16), and the activity penalty's
gradient on windows was 4 times Keras'."""

import numpy as np
import pytest

import flexflow_keras
from flexflow_keras import config

X = np.random.RandomState(0).randn(7, 8, 8, 4).astype("float32")
Y = np.random.RandomState(1).randn(7, 2).astype("float32")


def _counts(lib):
    ops = lib.ops

    class Count(lib.layers.Layer):
        def call(self, x):
            w = ops.reshape(x, (-1, 64))  # (B*4, 64)
            n = ops.cast(ops.shape(w)[0], "float32")
            return ops.reshape(w * 0.0 + n, (-1, 256))[:, :1]

    inp = lib.Input((8, 8, 4))
    return lib.Model(inp, Count()(inp)).predict(X, batch_size=4, verbose=0)


def _penalised(lib):
    ops, layers = lib.ops, lib.layers
    inp = lib.Input((8, 8, 4))
    w = layers.ActivityRegularization(l2=0.1)(layers.Dense(3)(ops.reshape(inp, (-1, 16, 4))))
    m = lib.Model(inp, layers.Dense(2)(ops.reshape(w, (-1, 192))))
    rs = np.random.RandomState(1)
    m.set_weights([rs.randn(*v.shape).astype("float32") * 0.3 for v in m.get_weights()])
    m.compile(lib.optimizers.SGD(0.01), "mse")
    m.fit(X, Y, batch_size=4, epochs=2, verbose=0, shuffle=False)
    return m.get_weights()


@pytest.mark.parametrize("degree", [1, 2])
def test_batch_size_of_folded_tensor_as_tf_keras(degree):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    config.reset()
    config.set(cpus=degree, data_parallel_degree=degree)
    ours, theirs = _counts(flexflow_keras), _counts(keras)
    np.testing.assert_array_equal(ours, theirs)  # 16 rows of the batches of 4, 12 of the last of 3
    assert ours[:, 0].tolist() == [16.0] * 4 + [12.0] * 3


def test_activity_penalty_on_folded_tensor_trains_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    config.reset()
    for a, b in zip(_penalised(flexflow_keras), _penalised(keras), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
