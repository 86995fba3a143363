"""benchmarks/_graphs.py at small sizes: each builder makes a graph of the expected op count, every op has
a unique name, the seeds are the loss tensors and the trainable uids the graph's trainable weights."""

from __future__ import annotations

import importlib
from collections import Counter
from pathlib import Path

import pytest

import flexflow_keras as keras
from flexflow_keras.ops.naming import node_names

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture
def graphs(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    keras.backend.clear_session()
    return importlib.import_module("_graphs")


SMALL = {  # builder -> (kwargs, expected op count of the training graph)
    # 5 conv, 3 pool, flatten, 3 dense, 2 dropout, softmax, loss
    "alexnet": (dict(image=64, dense=32, classes=10), 16),
    # stem 4; per block 3 conv+bn, 3 relu, add (+2 for a projection); pool, dense, softmax, loss
    "resnet50": (dict(image=32, width=4, blocks=(2, 1), classes=10), 4 + 12 + 10 + 12 + 4),
    # stem 5 conv_bn + 2 pool; module: 7 conv_bn + pool + concat; reduction: 4 conv_bn + pool + concat
    "inception": (dict(image=64, modules=2, scale=0.125, classes=10), 17 + 3 * 23 + 14 + 4),
    # fixed 8 (embedding, positions, add, pooling x2, dense, softmax, loss) + 22 per layer
    "transformer": (dict(layers=1, d_model=16, heads=2, seq=8, d_ff=32, vocab=50), 8 + 22),
    # bottom, 8 x (embedding, flatten), concat, top_1, top_2, click (with its fused sigmoid) and its copy
    # without it (the binary crossentropy reads the logits), loss
    "dlrm": (dict(rows=100, dim=8), 23),
    "wide_mlp": (dict(width=32), 5),
}


def _check(graphs, model_tuple, n_ops):
    model, label_shape, label_dtype, loss = model_tuple
    assert label_shape[0] is None and isinstance(loss, str)
    g, seeds, trainable = graphs.training_graph(model, label_shape, label_dtype, loss)
    assert len(g.nodes) == n_ops, Counter(n.op.type_name for n in g.nodes)
    names = node_names(g)
    assert all(names[n.uid] for n in g.nodes)
    assert len(set(names.values())) == len(g.nodes)
    loss_nodes = [n for n in g.nodes if n.op.type_name == "loss"]
    assert seeds == {t.uid for n in loss_nodes for t in n.outputs} and len(seeds) == 1
    assert trainable == {w.uid for n in g.nodes for w in n.weights if w.trainable}
    assert trainable
    return g


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_graphs(graphs, name, capsys):
    kwargs, n_ops = SMALL[name]
    _check(graphs, graphs.GRAPHS[name](keras, **kwargs), n_ops)
    assert capsys.readouterr() == ("", "")


def test_transformer_attention_shapes(graphs):
    g = _check(graphs, graphs.transformer_encoder(keras, layers=2, d_model=12, heads=3, seq=5, d_ff=8,
                                                  vocab=20), 8 + 2 * 22)
    matmuls = [tuple(n.outputs[0].shape) for n in g.nodes if n.op.type_name == "matmul"]
    assert matmuls == [(None, 3, 5, 5), (None, 3, 5, 4)] * 2  # scores per head, then context per head
    with pytest.raises(ValueError, match="divisible by heads"):
        graphs.transformer_encoder(keras, d_model=10, heads=3)


@pytest.mark.parametrize("n_ops", [30, 41, 60, 100])
def test_big_graph_hits_the_op_count(graphs, n_ops):
    _check(graphs, graphs.big_graph(keras, n_ops, d_model=8, heads=2, seq=4, d_ff=8), n_ops)


def test_big_graph_too_small(graphs):
    with pytest.raises(ValueError, match="n_ops=10"):
        graphs.big_graph(keras, 10)
