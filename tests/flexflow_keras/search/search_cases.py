"""Small problems for the search tests: the strategy-test models' training graphs on described machines,
whose costs come from the roofline (deterministic: nothing is measured)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "execution"))

from strategy_cases import graph_of  # noqa: E402

import flexflow_keras as keras  # noqa: E402
from flexflow_keras.search.costs import CostModel  # noqa: E402
from flexflow_keras.search.driver import Problem  # noqa: E402
from flexflow_keras.search.machine import MachineModel  # noqa: E402


def problem(name: str, batch: int = 8) -> Problem:
    g = graph_of(name)
    seeds = frozenset(t.uid for t in g.outputs if t.node is not None and t.node.op.type_name == "loss")
    trainable = frozenset(v.uid for v in g.variables if v.trainable)
    return Problem(g, seeds, trainable, batch, keras.optimizers.SGD(0.1), 0)


def machine(devices: int = 2, capacity_gb: float | None = None) -> MachineModel:
    m = MachineModel.from_file("pcie_2x4").scaled(1, devices)
    if capacity_gb is not None:
        from dataclasses import replace

        m.devices = [replace(d, capacity=int(capacity_gb * (1 << 30))) for d in m.devices]
    return m


def costs(m: MachineModel, tmp_path) -> CostModel:
    return CostModel(m, keras.optimizers.SGD(0.1), path=str(tmp_path / "costs.json"))


def wide_problem(batch: int = 1024) -> Problem:
    """A Dense 1024 -> 2048 -> 10 classifier: big enough that compute and transfers matter on GPUs."""
    from flexflow_keras.execution import LossSpec, build_training_graph
    from flexflow_keras.ops.graph import TensorSpec

    keras.backend.clear_session()
    model = keras.Sequential([keras.Input((1024,)), keras.layers.Dense(2048, activation="relu"),
                              keras.layers.Dense(10, activation="softmax")])
    g = model._graph_for(None)
    loss = keras.losses.get("sparse_categorical_crossentropy")
    tg = build_training_graph(g.inputs, g.outputs, [LossSpec(0, loss, 1.0, TensorSpec((None,), "int64"))])
    return Problem(tg.graph, frozenset(t.uid for t in tg.per_sample_losses if t is not None),
                   frozenset(v.uid for v in tg.graph.variables if v.trainable), batch,
                   keras.optimizers.SGD(0.1), 0)
