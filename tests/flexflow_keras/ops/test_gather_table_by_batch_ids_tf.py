"""A table without a batch dim gathered by the batch's ids (keras.io's gnn_citations: node features through
a network, then ``tf.gather(x, input_node_indices)``) trains data parallel as on one processor and as
tf.keras: each piece gathers its own ids. The default tile gave every piece all of the batch's ids (a
broadcast error at batch 8, or other rows' embeddings)."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config

NODES = np.random.default_rng(0).random((10, 5)).astype("float32")


def _model(k, ops):
    class Net(k.Model):
        def __init__(self):
            super().__init__()
            self.prep = k.layers.Dense(6, activation="tanh")
            self.out = k.layers.Dense(3)

        def call(self, ids):
            table = self.prep(ops.convert_to_tensor(NODES))
            return self.out(ops.take(table, ids, axis=0))

    m = Net()
    m(np.arange(4))
    return m


@pytest.mark.parametrize("degree", [1, 2])
def test_gather_of_a_table_by_batch_ids_trains_as_tf_keras(degree):
    tf = pytest.importorskip("tensorflow")
    ids = np.array([3, 7, 1, 0, 9, 2, 2, 5, 8, 4, 6, 1], np.int32)
    labels = np.arange(12) % 3
    theirs = _model(tf.keras, tf.keras.ops)
    config.set(cpus=2, data_parallel_degree=degree)
    try:
        ours = _model(keras, keras.ops)
        ours.set_weights(theirs.get_weights())
        hist = {}
        for m, kk in ((theirs, tf.keras), (ours, keras)):
            m.compile(kk.optimizers.SGD(0.5), kk.losses.SparseCategoricalCrossentropy(from_logits=True))
            hist[kk] = m.fit(ids, labels, batch_size=6, epochs=3, shuffle=False, verbose=0).history["loss"]
        np.testing.assert_allclose(hist[keras], hist[tf.keras], rtol=1e-5)
        np.testing.assert_allclose(ours.predict(ids, batch_size=6, verbose=0),
                                   theirs.predict(ids, batch_size=6, verbose=0), rtol=1e-4, atol=1e-5)
        for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    finally:
        config.reset()
