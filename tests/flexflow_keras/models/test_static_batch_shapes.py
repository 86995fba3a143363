"""A batch size declared on the Input (``Input(batch_shape=(16, ...))``, ``Input(shape, batch_size=16)``) shows
in every symbolic shape computed from it, as Keras 3's, while the graph keeps the batch open: fit and predict
take other batch sizes and data-parallel shards. keras.io's functional API guide ends on such a model."""

import copy
import json
import pickle

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, layers, ops
from flexflow_keras.ops.graph import StaticBatch


@pytest.fixture
def two_shards():
    config.set(only_data_parallel=True, cpus=2, data_parallel_degree=2)
    yield
    config.reset()


def _shapes(k):
    """Shapes of tensors computed from a (16, 10, 5) Input with the keras module `k`."""
    inp = k.Input(batch_shape=(16, 10, 5))
    x = k.layers.Conv1D(32, 3)(inp)
    return {
        "input": inp.shape,
        "batch_size": k.Input(shape=(3,), batch_size=4).shape,
        "conv": x.shape,
        "lstm": k.layers.LSTM(4, return_sequences=True)(x).shape,
        "gru": k.layers.GRU(3)(x).shape,
        "reshape": k.layers.Reshape((-1,))(x).shape,
        "flatten": k.layers.Flatten()(x).shape,
        "dense": k.layers.Dense(7)(x).shape,
        "mean": k.ops.mean(x, axis=1).shape,
        "sum_over_batch": k.ops.sum(x, axis=0).shape,
        "transpose": k.ops.transpose(x, (0, 2, 1)).shape,
        "ops_reshape": k.ops.reshape(x, (x.shape[0], -1)).shape,
        "concat": k.layers.Concatenate()([x, x]).shape,
        "pool": k.layers.GlobalAveragePooling1D()(x).shape,
        "open": k.Input(shape=(3,)).shape,
    }


def test_shapes_keep_the_declared_batch():
    got = _shapes(keras)
    assert got["input"] == (16, 10, 5)
    assert got["batch_size"] == (4, 3)
    assert got["conv"] == (16, 8, 32)
    assert got["lstm"] == (16, 8, 4)
    assert got["ops_reshape"] == (16, 256)
    assert got["sum_over_batch"] == (8, 32)
    assert got["open"] == (None, 3)
    assert "shape=(16, 10, 5)" in repr(keras.Input(batch_shape=(16, 10, 5)))


def test_shapes_match_tf_keras():
    tf = pytest.importorskip("tensorflow")
    ours, theirs = _shapes(keras), _shapes(tf.keras)
    assert ours == {name: tuple(s) for name, s in theirs.items()}


def test_the_graph_keeps_the_batch_open():
    inp = keras.Input(batch_shape=(16, 4))
    out = layers.Dense(2)(inp)
    assert out.spec.shape == (None, 2)  # what execution splits over the data-parallel shards
    assert isinstance(out.shape[0], StaticBatch) and out.shape[0] == 16


def test_summary_and_model_shapes_show_the_batch(capsys):
    inp = keras.Input(batch_shape=(16, 10, 5))
    model = keras.Model(inp, layers.Dense(2)(layers.Conv1D(32, 3)(inp)))
    assert model.input_shape == (16, 10, 5)
    assert model.output_shape == (16, 8, 2)
    model.summary()
    text = capsys.readouterr().out
    assert "(16, 10, 5)" in text and "(16, 8, 32)" in text and "(16, 8, 2)" in text


def test_a_declared_batch_is_a_plain_int_once_copied():
    b = keras.Input(batch_shape=(16, 4)).shape[0]
    assert b + 1 == 17 and type(b + 1) is int
    for again in (copy.deepcopy(b), pickle.loads(pickle.dumps(b))):
        assert again == 16 and type(again) is int
    assert json.dumps({"batch": b}) == '{"batch": 16}'


class CustomRNN(layers.Layer):
    """keras.io's functional API guide, last section: a state of zeros sized by the input's static batch."""

    def __init__(self, units=8):
        super().__init__()
        self.units = units
        self.projection_1 = layers.Dense(units=units, activation="tanh")
        self.projection_2 = layers.Dense(units=units, activation="tanh")
        self.classifier = layers.Dense(1)

    def call(self, inputs):
        outputs = []
        state = ops.zeros(shape=(inputs.shape[0], self.units))
        for t in range(inputs.shape[1]):
            h = self.projection_1(inputs[:, t, :])
            state = h + self.projection_2(state)
            outputs.append(state)
        return self.classifier(ops.stack(outputs, axis=1))


def _guide_model():
    keras.utils.set_random_seed(0)
    inputs = keras.Input(batch_shape=(16, 6, 5))
    outputs = CustomRNN()(layers.Conv1D(8, 3)(inputs))
    model = keras.Model(inputs, outputs)
    model.compile("sgd", "mse")
    return model


DATA = np.random.default_rng(0).standard_normal((64, 6, 5)).astype("float32")
TARGET = np.random.default_rng(1).standard_normal((64, 4, 1)).astype("float32")


def _fit_losses(model):
    return model.fit(DATA, TARGET, batch_size=16, epochs=2, shuffle=False, verbose=0).history["loss"]


def test_the_guides_custom_rnn_builds_and_runs():
    model = _guide_model()
    assert model.output_shape == (16, 4, 1)
    assert model.predict(DATA, batch_size=16, verbose=0).shape == (64, 4, 1)
    assert np.all(np.isfinite(_fit_losses(model)))
    # Keras 3 on TensorFlow runs other batch sizes as well; the graph's open batch takes them
    assert model.predict(DATA[:5], verbose=0).shape == (5, 4, 1)


def test_the_guides_custom_rnn_on_two_shards_matches_one(two_shards):
    config.reset()
    config.set(only_data_parallel=True, cpus=2, data_parallel_degree=1)
    one = _fit_losses(_guide_model())
    config.set(only_data_parallel=True, cpus=2, data_parallel_degree=2)
    model = _guide_model()
    two = _fit_losses(model)
    assert "[2, 1" in model._engine.strategy.describe()
    np.testing.assert_allclose(two, one, rtol=1e-5)


def test_shapes_built_from_the_declared_batch_follow_the_batch_fed():
    class Flat(layers.Layer):
        def call(self, x):
            noise = keras.random.normal((x.shape[0], 1, 1), seed=1) * 0.0
            return ops.reshape(x + noise + ops.broadcast_to(ops.ones((1, 1, 1)), (x.shape[0], 1, 1)),
                               (x.shape[0], -1))

    inp = keras.Input(batch_shape=(16, 3, 2))
    out = Flat()(inp)
    assert out.shape == (16, 6)
    model = keras.Model(inp, out)
    x = np.arange(30, dtype="float32").reshape(5, 3, 2)
    np.testing.assert_allclose(model.predict(x, verbose=0), x.reshape(5, 6) + 1.0)


def test_int_shape_gives_the_declared_batch_as_x_shape_does():
    x = keras.Input(batch_shape=(16, 10))
    y = keras.layers.Dense(3)(x)
    assert keras.backend.int_shape(x) == (16, 10) == tuple(x.shape)
    assert keras.backend.int_shape(y) == (16, 3)
    assert keras.backend.int_shape(keras.Input(shape=(4,))) == (None, 4)
