"""strategy_svg: valid SVG, every op named, colours by split kind, escaping, branching graphs, atomic write."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import layers
from flexflow_keras.errors import StrategyError
from flexflow_keras.execution import LossSpec, build_training_graph
from flexflow_keras.ops.graph import TensorSpec
from flexflow_keras.ops.naming import node_names
from flexflow_keras.ops.strategy import ParallelConfig, Strategy
from flexflow_keras.search.svg import KINDS, split_kind, strategy_svg, write_strategy_svg

NS = "{http://www.w3.org/2000/svg}"


def _training_graph(model, x_shapes):
    xs = [np.zeros((2,) + s, np.float32) for s in x_shapes]
    g = model._graph_for(xs)
    loss = keras.losses.get("sparse_categorical_crossentropy")
    return build_training_graph(g.inputs, g.outputs, [LossSpec(0, loss, 1.0, TensorSpec((None,), "int64"))]).graph


@pytest.fixture
def mlp_graph():
    keras.backend.clear_session()  # stable layer names
    model = keras.Sequential([keras.Input((6,)), layers.Dense(8, activation="relu"), layers.Dense(3)])
    return _training_graph(model, [(6,)])


@pytest.fixture
def branch_graph():
    keras.backend.clear_session()
    a, b = keras.Input((5,)), keras.Input((4,))
    h = layers.Concatenate()([layers.Dense(6)(a), layers.Dense(2)(b)])
    model = keras.Model([a, b], layers.Dense(3, activation="softmax")(h))
    return _training_graph(model, [(5,), (4,)])


def _op_groups(root):
    """(title text, rect fill) of every op box."""
    out = {}
    for g in root.iter(f"{NS}g"):
        if "op" in (g.get("class") or "").split():
            out[g.find(f"{NS}title").text.split(" (")[0]] = g.find(f"{NS}rect").get("fill")
    return out


def test_valid_svg_names_every_op(mlp_graph):
    s = Strategy.data_parallel(mlp_graph, 2, 2)
    text = strategy_svg(mlp_graph, s, "dp x2")
    root = ET.fromstring(text)
    assert root.tag == f"{NS}svg"
    names = set(node_names(mlp_graph).values())
    assert names == set(_op_groups(root))
    texts = " ".join(t.text or "" for t in root.iter(f"{NS}text"))
    assert "dp x2" in texts
    for name in names:
        assert name in texts
    assert "[2, 1] on [0, 1]" in texts


def test_colours_differ_by_split_kind(mlp_graph):
    configs = Strategy.data_parallel(mlp_graph, 2, 2).as_dict()
    configs["dense_1"] = ParallelConfig((1, 3), (0, 1, 2))          # output features split
    configs["dense"] = ParallelConfig((1, 1), (0, 1), reduce=2)      # partial sums
    fills = _op_groups(ET.fromstring(strategy_svg(mlp_graph, Strategy(configs))))
    assert fills["dense_1"] == KINDS["parameter"][1]
    assert fills["loss"] == KINDS["data"][1]
    assert fills["dense_1"] != fills["loss"]
    assert fills["dense"] == KINDS["reduce"][1]


def test_split_kinds_of_whole_placed_missing(mlp_graph):
    node = next(n for n in mlp_graph.nodes if n.op.type_name == "dense")
    assert split_kind(node, ParallelConfig((1, 1), (0,))) == "whole"
    assert split_kind(node, ParallelConfig((1, 1), (3,))) == "placed"
    assert split_kind(node, ParallelConfig((2, 2), (0, 1, 2, 3))) == "parameter"
    assert split_kind(node, None) == "missing"


def test_escapes_names_and_title():
    keras.backend.clear_session()
    model = keras.Sequential([keras.Input((4,)), layers.Dense(2, name="a<&>b")])
    g = _training_graph(model, [(4,)])
    text = strategy_svg(g, Strategy.data_parallel(g, 1), 'title "<&>"\x01')
    root = ET.fromstring(text)
    assert "a<&>b" in _op_groups(root)
    assert "a<&>b" in [t.text for t in root.iter(f"{NS}text")]
    assert 'title "<&>"' in [t.text for t in root.iter(f"{NS}text")]


def test_branches_draw_an_edge_per_producer(branch_graph):
    names = node_names(branch_graph)
    s = Strategy.data_parallel(branch_graph, 2, 4)
    partial = Strategy({k: v for k, v in s.configs if k != "concatenate"}, "partial")
    root = ET.fromstring(strategy_svg(branch_graph, partial))
    assert set(_op_groups(root)) == set(names.values())
    assert _op_groups(root)["concatenate"] == KINDS["missing"][1]
    present = {n.uid for n in branch_graph.nodes}
    n_edges = len({(t.node.uid, n.uid) for n in branch_graph.nodes for t in n.inputs
                   if t.node is not None and t.node.uid in present})
    paths = [p for p in root.iter(f"{NS}path") if p.get("marker-end")]
    assert len(paths) == n_edges >= 4  # two Dense into the Concatenate, then a chain to the loss
    # the two branch Dense ops share the first column; the Concatenate sits to their right
    xs = {}
    for g in root.iter(f"{NS}g"):
        if "op" in (g.get("class") or "").split():
            xs[g.find(f"{NS}title").text.split(" (")[0]] = float(g.find(f"{NS}rect").get("x"))
    assert xs["dense"] == xs["dense_1"] < xs["concatenate"]


def test_unknown_names_are_noted(mlp_graph):
    s = Strategy({"ghost": ParallelConfig((1,), (0,))}, "stale")
    text = strategy_svg(mlp_graph, s)
    assert "ghost" in text
    ET.fromstring(text)


def test_write_is_atomic(tmp_path, mlp_graph):
    path = tmp_path / "s.svg"
    write_strategy_svg(str(path), mlp_graph, Strategy.data_parallel(mlp_graph, 2), "t")
    ET.parse(path)
    assert os.listdir(tmp_path) == ["s.svg"]
    with pytest.raises(StrategyError, match="cannot write the picture"):
        write_strategy_svg(str(tmp_path / "missing" / "s.svg"), mlp_graph, Strategy.data_parallel(mlp_graph, 2))
    assert os.listdir(tmp_path) == ["s.svg"]
