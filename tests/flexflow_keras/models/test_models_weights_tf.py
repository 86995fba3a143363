"""Weights: the same order and shapes as tf.keras (so get_weights/set_weights copy across), the same
outputs on the same weights, and save_weights/load_weights files that interchange with tf.keras."""

import numpy as np
import pytest

import flexflow_keras as ff

tf = pytest.importorskip("tensorflow")
pytestmark = pytest.mark.tf

rng = np.random.default_rng(0)


def dense_model(k):
    return k.Sequential([k.Input((12,)), k.layers.Dense(8, activation="relu"), k.layers.Dense(3, activation="softmax")])


def cnn_model(k):
    L = k.layers
    return k.Sequential([k.Input((9, 9, 2)), L.Conv2D(4, 3, activation="relu"), L.BatchNormalization(),
                         L.MaxPooling2D(), L.Conv2D(3, 2, padding="same"), L.GlobalAveragePooling2D(),
                         L.Dense(2)])


def embed_model(k):
    L = k.layers
    x = k.Input((6,), dtype="int32")
    h = L.LayerNormalization()(L.Embedding(30, 4)(x))
    return k.Model(x, L.Dense(1, activation="sigmoid")(L.Flatten()(h)))


def two_input_model(k):
    L = k.layers
    a, b = k.Input((5,)), k.Input((3,))
    inner = k.Sequential([k.Input((5,)), L.Dense(4), L.BatchNormalization()])
    return k.Model([a, b], L.Dense(2)(L.concatenate([inner(a), L.Dense(2)(b)])))


def rnn_model(k):
    L = k.layers
    return k.Sequential([k.Input((5, 3)), L.Bidirectional(L.LSTM(4, return_sequences=True)),
                         L.GRU(2, return_sequences=True), L.SimpleRNN(3), L.Dense(1)])


def data_for(model):
    xs = []
    for t in model.inputs:
        shape = (4,) + tuple(t.shape[1:])
        xs.append(rng.integers(0, 30, shape).astype("int32") if "int" in str(t.dtype)
                  else rng.standard_normal(shape).astype("float32"))
    return xs[0] if len(xs) == 1 else xs


@pytest.mark.parametrize("build", [dense_model, cnn_model, embed_model, two_input_model])
def test_weights_order_shapes_and_outputs_match(build):
    theirs, ours = build(tf.keras), build(ff)
    assert [w.shape for w in ours.get_weights()] == [tuple(w.shape) for w in theirs.get_weights()]
    assert [w.trainable for w in ours.weights] == [w.trainable for w in theirs.weights]
    assert len(ours.trainable_weights) == len(theirs.trainable_weights)
    assert ours.count_params() == theirs.count_params()
    weights = [w + rng.uniform(0.1, 0.3, w.shape).astype(w.dtype) for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(theirs.get_weights())
    x = data_for(ours)
    np.testing.assert_allclose(ours(x), np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("build", [cnn_model, two_input_model, rnn_model])
def test_weights_files_interchange_with_tf_keras(build, tmp_path):
    theirs, ours = build(tf.keras), build(ff)
    theirs.save_weights(str(tmp_path / "theirs.weights.h5"))
    ours.load_weights(tmp_path / "theirs.weights.h5")
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    fresh = build(ff)
    ours.save_weights(tmp_path / "ours.weights.h5")
    back = build(tf.keras)
    back.load_weights(str(tmp_path / "ours.weights.h5"))
    fresh.load_weights(tmp_path / "ours.weights.h5")
    for a, b, c in zip(back.get_weights(), ours.get_weights(), fresh.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(c, b)


def test_subclassed_weights_file_matches_tf_keras(tmp_path):
    def build(k):
        class Net(k.Model):
            def __init__(self):
                super().__init__()
                self.first = k.layers.Dense(4)
                self.blocks = [k.layers.Dense(3), k.layers.Dense(2)]

            def call(self, x):
                return self.blocks[1](self.blocks[0](self.first(x)))
        net = Net()
        net(np.ones((1, 5), "float32"))
        return net

    theirs, ours = build(tf.keras), build(ff)
    theirs.save_weights(str(tmp_path / "sub.weights.h5"))
    ours.load_weights(tmp_path / "sub.weights.h5")
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
