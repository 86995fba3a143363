"""The misc layers' ops under random legal strategies compute the single-processor numbers: a model with
MultiHeadAttention (projections, masked softmax, dropout on the scores), the noise layers in training,
PReLU, CategoryEncoding, Normalization and ActivityRegularization; losses and weights after 3 steps."""

import numpy as np
import pytest
import strategy_cases as sc
from strategy_cases import BATCH, compile_model, random_strategy

import flexflow_keras as keras
from flexflow_keras import config, layers
from flexflow_keras.execution import LossSpec, build_training_graph
from flexflow_keras.ops.graph import TensorSpec


def misc_model():
    keras.backend.clear_session()  # the same layer names every time
    keras.utils.set_random_seed(8)
    x = keras.Input((4, 6))
    ids = keras.Input((3,), dtype="int32")
    h = layers.Normalization(mean=0.5, variance=2.0)(x)
    h = layers.GaussianNoise(0.1, seed=1)(h)
    a = layers.MultiHeadAttention(num_heads=2, key_dim=3, dropout=0.2, seed=2)(h, h, use_causal_mask=True)
    h = layers.PReLU(alpha_initializer="constant")(layers.Add()([h, a]))
    h = layers.GaussianDropout(0.2, seed=3)(layers.AlphaDropout(0.2, seed=4)(h))
    h = layers.ActivityRegularization(l2=0.01)(layers.Flatten()(h))
    c = layers.CategoryEncoding(num_tokens=5, output_mode="count")(ids)
    h = layers.Concatenate()([h, c])
    return keras.Model([x, ids], layers.Dense(3, activation="softmax")(h))


def misc_data(n=3 * BATCH, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, 4, 6)).astype("float32"), rng.integers(0, 5, (n, 3)).astype("int32")], \
        rng.integers(0, 3, n)


def train(strategy, cpus, executor="threaded", steps=3):
    config.set(cpus=cpus, executor=executor, data_parallel_degree=1)
    model = misc_model()
    compile_model(model, strategy)
    x, y = misc_data()
    losses = []
    for k in range(steps):
        sl = slice(k * BATCH, (k + 1) * BATCH)
        losses.append(float(np.asarray(model.train_on_batch([a[sl] for a in x], y[sl]))[0]))
    return losses, model.get_weights()


def graph():
    model = misc_model()
    compile_model(model)
    g = model._graph_for(misc_data()[0])
    loss = keras.losses.get("sparse_categorical_crossentropy")
    return build_training_graph(g.inputs, g.outputs, [LossSpec(0, loss, 1.0, TensorSpec((None,), "int64"))]).graph


@pytest.fixture(scope="module")
def reference():
    config.reset()
    result = train(None, 1, "sequential")
    config.reset()
    return result


@pytest.mark.parametrize("seed,devices", [(1, 2), (7, 3)])
def test_random_strategies_match_one_processor(seed, devices, reference):
    strategy = random_strategy(graph(), np.random.default_rng(seed), devices)
    losses, weights = train(strategy, devices)
    np.testing.assert_allclose(losses, reference[0], rtol=1e-5, atol=1e-6)
    for a, b in zip(weights, reference[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)
    assert sc.BATCH == BATCH
