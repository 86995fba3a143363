"""A tensor whose batch dim a reshape folded (k rows per sample, `batch_scale`) is split between whole
samples when the batch does not divide by the degree (parallel.tile_boxes' units): 8 samples on 3
processors are 3, 3 and 2 samples, so 12, 12 and 8 of its 32 rows. The rows were cut 11, 11, 10, and the
reshape that folds them stopped ("cannot reshape array of size 2048 into shape (11,16,4)")."""

import numpy as np
import pytest

import flexflow_keras
from flexflow_keras import config
from flexflow_keras.ops import parallel as par

RS = np.random.RandomState(0)
X = RS.randn(20, 8, 8, 4).astype("float32")
Y = RS.randint(0, 3, 20)


def _model():
    ops, layers = flexflow_keras.ops, flexflow_keras.layers
    inp = flexflow_keras.Input((8, 8, 4))
    x = ops.transpose(ops.reshape(inp, (-1, 2, 4, 2, 4, 4)), (0, 1, 3, 2, 4, 5))
    w = layers.LayerNormalization()(ops.reshape(x, (-1, 16, 4)))  # (B*4, 16, 4): the windows
    att = ops.softmax(ops.matmul(layers.Dense(8)(w), ops.transpose(layers.Dense(8)(w), (0, 2, 1))), axis=-1)
    w = ops.reshape(ops.matmul(att, layers.Dense(6)(w)), (-1, 2, 2, 4, 4, 6))
    w = ops.reshape(ops.transpose(w, (0, 1, 3, 2, 4, 5)), (-1, 8, 8, 6))
    m = flexflow_keras.Model(inp, layers.Dense(3, activation="softmax")(layers.GlobalAveragePooling2D()(w)))
    rs = np.random.RandomState(1)
    m.set_weights([rs.randn(*v.shape).astype("float32") * 0.5 for v in m.get_weights()])
    return m


def _run(degree, batch):
    config.reset()
    config.set(cpus=degree, data_parallel_degree=degree)
    m = _model()
    m.compile(flexflow_keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=["accuracy"])
    hist = m.fit(X, Y, batch_size=batch, epochs=2, verbose=0, shuffle=False)
    return (hist.history["loss"], m.evaluate(X, Y, batch_size=batch, verbose=0),
            m.predict(X, batch_size=batch, verbose=0), m.get_weights())


def test_tile_boxes_cut_between_samples():
    boxes = par.tile_boxes((32, 16), (3, 1), (4, 1))
    assert [(b[0][0], b[1][0]) for b in boxes] == [(0, 12), (12, 24), (24, 32)]
    assert par.tile_boxes((32, 16), (3, 1)) == par.tile_boxes((32, 16), (3, 1), (1, 1))


@pytest.mark.parametrize("degree,batch", [(3, 8), (2, 7)])
def test_uneven_split_of_folded_rows_trains_as_one_processor(degree, batch):
    one, many = _run(1, batch), _run(degree, batch)
    np.testing.assert_allclose(many[0], one[0], rtol=1e-5)
    np.testing.assert_allclose(many[1], one[1], rtol=1e-5)
    np.testing.assert_allclose(many[2], one[2], rtol=1e-5, atol=1e-6)
    for a, b in zip(many[3], one[3], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
