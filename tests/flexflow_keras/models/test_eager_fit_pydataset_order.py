"""fit() of a model whose train_step runs eagerly (models/eager_fit.py) reads a PyDataset's batches in a
shuffled order each epoch when shuffle=True, as Keras 3's PyDataset adapter does (``random.shuffle`` of
the batch indices), and in order with shuffle=False. Before, it always read them in order, so keras.io's
metric_learning (a PyDataset of anchor/positive pairs, fit's default shuffle=True) saw its batches in
another order than under Keras."""

import numpy as np

import flexflow_keras as keras


class _Step(keras.Model):
    def __init__(self):
        super().__init__()
        self.d = keras.layers.Dense(1)

    def call(self, x):
        return self.d(x)

    def train_step(self, data):  # no compute_loss: runs eagerly
        self(data[0])
        return {"n": 0.0}


class _Recorded(keras.utils.PyDataset):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __len__(self):
        return 8

    def __getitem__(self, i):
        self.seen.append(i)
        return np.full((2, 3), i, np.float32), np.zeros((2, 1), np.float32)


def _orders(shuffle):
    m = _Step()
    m.compile(optimizer="sgd")
    data = _Recorded()
    m.fit(data, epochs=3, shuffle=shuffle, verbose=0)
    assert data.seen[:2] == [0, 1]  # tf.keras' signature reads (test_pydataset_spec_reads_tf.py)
    return [data.seen[k:k + 8] for k in range(2, 26, 8)]


def test_shuffle_true_permutes_the_batches_each_epoch():
    orders = _orders(True)
    assert all(sorted(o) == list(range(8)) for o in orders)
    assert any(o != list(range(8)) for o in orders)


def test_shuffle_false_keeps_the_batch_order():
    assert _orders(False) == [list(range(8))] * 3
