"""An open dim (``Input(shape=(None, ...))``) against a known size, as Keras 3 shapes it: broadcasting
takes the known size and concatenate leaves the dim open; the data's length is checked when the graph is
recorded again at the data's shapes, with a clear error naming both sizes."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.errors import ShapeError
from flexflow_keras.ops._util import broadcast_shapes


def test_open_dim_takes_the_known_size_and_the_batch_does_not():
    assert broadcast_shapes((None, None, 8), (20, 8), "add") == (None, 20, 8)
    assert broadcast_shapes((20, 8), (None, None, 8), "add") == (None, 20, 8)
    assert broadcast_shapes((None, None, 8), (None, 1, 8), "add") == (None, None, 8)
    with pytest.raises(ShapeError, match=r"dim 0 is None \(the batch\) vs 5"):
        broadcast_shapes((None, 8), (5, 8), "add")
    with pytest.raises(ShapeError, match="dim 1 is 15 vs 20"):
        broadcast_shapes((None, 15, 8), (20, 8), "add")


def _positional(lib, length):
    class AddPositions(lib.layers.Layer):
        def build(self, input_shape):
            self.table = self.add_weight(shape=(length, 8), initializer="random_normal", name="table")

        def call(self, x):
            return x + self.table

    inputs = lib.Input(shape=(None,), dtype="int32")
    x = AddPositions()(lib.layers.Embedding(50, 8)(inputs))
    x = lib.ops.concatenate([x, lib.layers.Dense(4)(x)], axis=-1)
    return lib.Model(inputs, lib.layers.Dense(3)(lib.layers.GlobalAveragePooling1D()(x)))


def test_symbolic_shapes_match_tf_keras():
    tf = pytest.importorskip("tensorflow")
    for lib in (keras, tf.keras):
        a, b = lib.Input(shape=(None, 8)), lib.Input(shape=(20, 8))
        assert tuple((a + b).shape) == (None, 20, 8)
        assert tuple(lib.ops.maximum(a, b).shape) == (None, 20, 8)
        assert tuple(lib.ops.concatenate([a, b], axis=2).shape) == (None, None, 16)
        assert tuple(lib.layers.Concatenate()([a, b]).shape) == (None, None, 16)


def test_trains_as_tf_keras_at_the_table_length():
    tf = pytest.importorskip("tensorflow")
    ours, theirs = _positional(keras, 20), _positional(tf.keras, 20)
    theirs.set_weights(ours.get_weights())
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 50, (24, 20)), rng.normal(size=(24, 3)).astype("float32")
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    for m in (ours, theirs):
        m.compile(optimizer=(keras if m is ours else tf.keras).optimizers.SGD(0.1), loss="mse")
    h1 = ours.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_data_of_another_length_is_a_clear_error():
    model = _positional(keras, 20)
    with pytest.raises(ShapeError, match=r"\(None, 15, 8\) and \(20, 8\): dim 1 is 15 vs 20"):
        model.predict(np.zeros((4, 15), "int32"), verbose=0)
