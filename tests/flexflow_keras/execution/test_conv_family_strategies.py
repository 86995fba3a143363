"""Random legal strategies over a model chaining every convolution-family layer (Conv1D, Conv1DTranspose,
a grouped Conv2D,
Conv2DTranspose, DepthwiseConv1D/2D, SeparableConv1D/2D, UpSampling1D/2D, ZeroPadding1D/2D, Cropping1D/2D,
Max/AveragePooling1D) compute the single-processor losses and weights: their parallel rules (sample, steps/height/width with
halos, channel and filter splits) as the execution runs them, partial input gradients reduced."""

import numpy as np
import pytest
from strategy_cases import BATCH, compile_model, random_strategy

import flexflow_keras as keras
from flexflow_keras import config, layers


def conv_family():
    keras.backend.clear_session()
    keras.utils.set_random_seed(3)
    inp = layers.Input((6, 5, 2))
    h = layers.ZeroPadding2D(((1, 0), (0, 1)))(inp)
    h = layers.Conv2D(2, 3, padding="same", groups=2, activation="relu")(h)  # ConvNeXt's grouped kernel
    h = layers.DepthwiseConv2D(3, padding="same", activation="tanh")(h)
    h = layers.DepthwiseConv2D(2, depth_multiplier=2)(h)
    h = layers.SeparableConv2D(3, 2, padding="same")(h)
    h = layers.Conv2DTranspose(3, 3, strides=2, padding="same")(h)
    h = layers.Cropping2D(((1, 1), (0, 2)))(h)
    h = layers.UpSampling2D((1, 2), interpolation="bilinear")(h)
    h = layers.Reshape((-1, 3))(h)
    h = layers.Conv1D(4, 3, strides=2, padding="same", activation="relu")(h)
    h = layers.Conv1D(4, 2, padding="causal", dilation_rate=2)(h)
    h = layers.Conv1DTranspose(3, 3, strides=2, output_padding=1)(h)
    h = layers.SeparableConv1D(3, 2, padding="same")(h)
    h = layers.DepthwiseConv1D(3, depth_multiplier=2, padding="same")(h)
    h = layers.MaxPooling1D(3, strides=2, padding="same")(h)
    h = layers.UpSampling1D(2)(h)
    h = layers.ZeroPadding1D((1, 0))(h)
    h = layers.Cropping1D((0, 1))(h)
    h = layers.AveragePooling1D(2)(h)
    h = layers.Flatten()(h)
    return keras.Model(inp, layers.Dense(5, activation="softmax")(h))


def data(n=3 * BATCH):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 6, 5, 2)).astype("float32"), rng.integers(0, 5, n)


def train(strategy, cpus, steps=3):
    config.set(cpus=cpus, executor="threaded", data_parallel_degree=1)
    model = conv_family()
    compile_model(model, strategy)
    x, y = data()
    losses = [float(np.asarray(model.train_on_batch(x[k * BATCH:(k + 1) * BATCH], y[k * BATCH:(k + 1) * BATCH]))[0])
              for k in range(steps)]
    return losses, model.get_weights()


def training_graph():
    from flexflow_keras.execution import LossSpec, build_training_graph
    from flexflow_keras.ops.graph import TensorSpec

    model = conv_family()
    compile_model(model)
    g = model._graph_for([data()[0]])
    loss = keras.losses.get("sparse_categorical_crossentropy")
    return build_training_graph(g.inputs, g.outputs, [LossSpec(0, loss, 1.0, TensorSpec((None,), "int64"))]).graph


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_strategies_match_one_processor(seed):
    want_losses, want_weights = train(None, cpus=1)
    strategy = random_strategy(training_graph(), np.random.default_rng(seed), 3)
    losses, weights = train(strategy, cpus=3)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    for a, b in zip(weights, want_weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)


def test_height_split_expert_covers_depthwise_and_1d_windows():
    """The search's spatial-split expert splits depthwise convolutions along height and conv1d / pool1d
    along steps, and that strategy trains like one processor."""
    from flexflow_keras.ops.naming import node_names
    from flexflow_keras.search.experts import conv_spatial_split

    graph = training_graph()
    strategy = conv_spatial_split(graph, 2)
    names, configs = node_names(graph), dict(strategy.configs)
    split = {n.op.type_name for n in graph.nodes if configs[names[n.uid]].degrees[1:2] == (2,)}
    assert {"depthwise_conv2d", "conv1d", "pool1d"} <= split
    want_losses, want_weights = train(None, cpus=1)
    losses, weights = train(strategy, cpus=2)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    for a, b in zip(weights, want_weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)
