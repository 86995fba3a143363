"""Random legal strategies over a 3-D CNN (Conv3D, Conv3DTranspose, Max/AveragePooling3D, BatchNormalization, UpSampling3D,
ZeroPadding3D, Cropping3D, GlobalAveragePooling3D) compute the single-processor losses and weights: the
3-D ops' batch and channel splits (the convolutions' kernels and biases split by filters, the transposed one's input gradient summed
over its filter pieces) as the execution runs them."""

import numpy as np
import pytest
from strategy_cases import BATCH, compile_model, random_strategy

import flexflow_keras as keras
from flexflow_keras import config, layers
from flexflow_keras.ops.conv3d import Conv3DOp, Conv3DTransposeOp, Pool3DOp
from flexflow_keras.ops.strategy import node_space


def volume_cnn():
    keras.backend.clear_session()
    keras.utils.set_random_seed(5)
    inp = layers.Input((4, 5, 6, 2))
    h = layers.Conv3D(4, 3, padding="same", dilation_rate=(1, 2, 1), activation="relu")(inp)
    h = layers.MaxPooling3D(2, padding="same")(h)
    h = layers.BatchNormalization()(h)
    h = layers.Conv3D(6, (2, 1, 2), strides=(1, 1, 2), activation="gelu")(h)
    h = layers.AveragePooling3D((1, 2, 1), padding="same")(h)
    h = layers.Conv3DTranspose(3, 2, strides=(1, 2, 1), activation="relu")(h)
    h = layers.UpSampling3D((2, 1, 1))(h)
    h = layers.ZeroPadding3D(((1, 0), (0, 0), (0, 1)))(h)
    h = layers.Cropping3D(((0, 1), (0, 0), (1, 0)))(h)
    h = layers.GlobalAveragePooling3D()(h)
    return keras.Model(inp, layers.Dense(5, activation="softmax")(h))


def data(n=3 * BATCH):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 4, 5, 6, 2)).astype("float32"), rng.integers(0, 5, n)


def train(strategy, cpus, steps=3):
    config.set(cpus=cpus, executor="threaded", data_parallel_degree=1)
    model = volume_cnn()
    compile_model(model, strategy)
    x, y = data()
    return [float(np.asarray(model.train_on_batch(x[k * BATCH:(k + 1) * BATCH], y[k * BATCH:(k + 1) * BATCH]))[0])
            for k in range(steps)], model.get_weights()


def training_graph():
    from flexflow_keras.execution import LossSpec, build_training_graph
    from flexflow_keras.ops.graph import TensorSpec

    model = volume_cnn()
    compile_model(model)
    g = model._graph_for([data()[0]])
    loss = keras.losses.get("sparse_categorical_crossentropy")
    return build_training_graph(g.inputs, g.outputs, [LossSpec(0, loss, 1.0, TensorSpec((None,), "int64"))]).graph


def test_the_3d_ops_split_batch_and_channels_only():
    ops = [n for n in training_graph().nodes if isinstance(n.op, (Conv3DOp, Conv3DTransposeOp, Pool3DOp))]
    assert len(ops) == 5
    for node in ops:
        space = node_space(node)
        assert [r.splittable for r in space.dims] == [True, False, False, False, True]
        assert "not along depth, height or width" in space.dims[1].why


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_strategies_match_one_processor(seed):
    want_losses, want_weights = train(None, cpus=1)
    strategy = random_strategy(training_graph(), np.random.default_rng(seed), 3)
    assert any(c.degrees[-1] > 1 for name, c in strategy.configs if "conv3d" in name or "pooling3d" in name)
    losses, weights = train(strategy, cpus=3)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    for a, b in zip(weights, want_weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)
