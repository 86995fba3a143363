"""Models and random legal strategies shared by the strategy-execution tests (and the simulated-GPU run).

`random_strategy` draws, for every op, degrees from its parallel rules (sample, attribute and parameter
dims, and the partial-sum count where the op has one), capped so a launch has at most `max_pieces`
pieces, and places the pieces on random processors. `train` runs 3 steps and returns the losses and the
weights, to compare against the single-processor run.
"""

from __future__ import annotations

import numpy as np

import flexflow_keras as keras
from flexflow_keras import config, layers
from flexflow_keras.ops.naming import node_names
from flexflow_keras.ops.strategy import ParallelConfig, Strategy, node_space

BATCH = 8


def mlp():
    keras.backend.clear_session()  # the same layer names every time
    keras.utils.set_random_seed(3)
    return keras.Sequential([keras.Input((12,)), layers.Dense(16, activation="relu"), layers.Dense(10),
                             layers.Activation("tanh"), layers.Dense(4, activation="softmax")])


def cnn():
    keras.backend.clear_session()  # the same layer names every time
    keras.utils.set_random_seed(4)
    return keras.Sequential([
        keras.Input((10, 9, 2)), layers.Conv2D(6, 3, padding="same", activation="relu"),
        layers.BatchNormalization(), layers.MaxPooling2D(2, padding="same"),
        layers.Conv2D(4, 3, strides=2, activation="relu"), layers.AveragePooling2D(2, strides=1),
        layers.Dropout(0.3), layers.Flatten(), layers.Dense(5, activation="softmax")])


def embedding_model():
    keras.backend.clear_session()  # the same layer names every time
    keras.utils.set_random_seed(5)
    ids = keras.Input((6,), dtype="int32")
    e = layers.Embedding(30, 8)(ids)
    h = layers.GlobalAveragePooling1D()(e) if hasattr(layers, "GlobalAveragePooling1D") else layers.Flatten()(e)
    h = layers.Dense(8, activation="relu")(h)
    return keras.Model(ids, layers.Dense(3, activation="softmax")(h))


def two_branch():
    keras.backend.clear_session()  # the same layer names every time
    keras.utils.set_random_seed(6)
    a = keras.Input((7,))
    b = keras.Input((5,))
    ha = layers.Dense(6, activation="relu")(a)
    hb = layers.Dense(4)(b)
    hb = layers.LayerNormalization()(hb)
    h = layers.Concatenate()([ha, hb])
    h = layers.Dense(8, activation="relu")(h)
    return keras.Model([a, b], layers.Dense(3, activation="softmax")(h))


def tiny():
    keras.backend.clear_session()  # the same layer names every time
    keras.utils.set_random_seed(7)
    return keras.Sequential([keras.Input((12,)), layers.Dense(4, activation="softmax")])


MODELS = {"tiny": tiny, "mlp": mlp, "cnn": cnn, "embedding": embedding_model, "two_branch": two_branch}


def data(name: str, n: int = 3 * BATCH, seed: int = 0):
    rng = np.random.default_rng(seed)
    if name in ("mlp", "tiny"):
        x = rng.standard_normal((n, 12)).astype("float32")
        return x, rng.integers(0, 4, n)
    if name == "cnn":
        return rng.standard_normal((n, 10, 9, 2)).astype("float32"), rng.integers(0, 5, n)
    if name == "embedding":
        return rng.integers(0, 30, (n, 6)).astype("int32"), rng.integers(0, 3, n)
    return [rng.standard_normal((n, 7)).astype("float32"), rng.standard_normal((n, 5)).astype("float32")], \
        rng.integers(0, 3, n)


def compile_model(model, strategy=None):
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"], strategy=strategy)


def graph_of(name: str):
    """The training graph (with the loss) of a fresh model, for drawing strategies."""
    from flexflow_keras.execution import LossSpec, build_training_graph
    from flexflow_keras.ops.graph import TensorSpec

    model = MODELS[name]()
    compile_model(model)
    x, _ = data(name)
    xs = x if isinstance(x, list) else [x]
    g = model._graph_for(xs)
    loss = keras.losses.get("sparse_categorical_crossentropy")
    return build_training_graph(g.inputs, g.outputs, [LossSpec(0, loss, 1.0, TensorSpec((None,), "int64"))]).graph


def random_strategy(graph, rng: np.random.Generator, n_devices: int, max_pieces: int = 6,
                    batch: int = BATCH) -> Strategy:
    names = node_names(graph)
    configs = {}
    for node in graph.nodes:
        space = node_space(node)
        degrees = []
        budget = max_pieces
        for rule, extent in zip(space.dims, space.extents, strict=True):
            top = min(budget, batch if extent is None else extent, 3) if rule.splittable else 1
            d = int(rng.integers(1, top + 1)) if top > 1 else 1
            degrees.append(d)
            budget = max(1, budget // d)
        reduce = 1
        if space.reduce is not None and budget >= 2 and rng.random() < 0.5:
            reduce = 2
        pieces = int(np.prod(degrees)) * reduce
        devices = tuple(int(v) for v in rng.integers(0, n_devices, pieces))
        configs[names[node.uid]] = ParallelConfig(tuple(degrees), devices, reduce)
    return Strategy(configs, "random")


def train(name: str, strategy=None, executor: str = "threaded", cpus: int = 3, steps: int = 3):
    """(losses per step, weights) after `steps` steps of batch BATCH, under `strategy` (None: one processor)."""
    config.set(cpus=cpus, executor=executor, data_parallel_degree=1)
    model = MODELS[name]()
    compile_model(model, strategy)
    x, y = data(name)
    losses = []
    for k in range(steps):
        sl = slice(k * BATCH, (k + 1) * BATCH)
        xb = [a[sl] for a in x] if isinstance(x, list) else x[sl]
        losses.append(float(np.asarray(model.train_on_batch(xb, y[sl]))[0]))
    return losses, model.get_weights()
