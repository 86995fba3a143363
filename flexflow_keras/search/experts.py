"""Expert strategies: the hand-written splits practitioners use, built for any graph and device count.

- `dense_parameter_split`: every Dense split along its output features over all devices (model
  parallelism for wide MLPs); the other ops data parallel. On a CNN this is the hybrid of Krizhevsky's
  "one weird trick" and FlexFlow's expert CNN strategy: data-parallel convolutions, model-parallel Dense.
- `conv_spatial_split`: convolutions, poolings and batch norms split along the image height.
- `column_row_mlp`: a Dense with an activation followed by a linear Dense: the first split along its
  output features, the second along its input features (partial sums), so the hidden activation is
  never gathered (Megatron's transformer MLP).
- `embedding_placement`: every embedding table whole on its own device, round-robin (recommendation
  models); the other ops data parallel.

Each returns None when it does not apply to the graph (nothing would differ from data parallelism).
The search always scores these beside data parallelism at every degree.
"""

from __future__ import annotations

from collections.abc import Callable

from flexflow_keras.errors import StrategyError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.naming import node_names
from flexflow_keras.ops.strategy import (
    ParallelConfig,
    Strategy,
    check_config,
    data_parallel_config,
    node_space,
)


def _types(node) -> str:
    return node.op.type_name


def _build(graph, n: int, pick: Callable, source: str) -> Strategy | None:
    """Data parallelism of degree `n`, with `pick(node, space)` -> config (or None) overriding ops."""
    names = node_names(graph)
    configs = {}
    changed = False
    for node in graph.nodes:
        name = names[node.uid]
        cfg = None
        space = node_space(node)
        try:
            cfg = pick(node, space)
            if cfg is not None:
                check_config(node, name, cfg, n)
        except StrategyError:
            cfg = None
        if cfg is None:
            cfg = data_parallel_config(node, n, n)
        else:
            changed = True
        configs[name] = cfg
    return Strategy(configs, source) if changed else None


def _split_dim(space: par.ParallelSpace, dim: int, n: int) -> ParallelConfig | None:
    d = dim % len(space.dims)
    rule, extent = space.dims[d], space.extents[d]
    if not rule.splittable or (extent is not None and extent < n):
        return None
    degrees = [1] * len(space.dims)
    degrees[d] = n
    return ParallelConfig(tuple(degrees), tuple(range(n)))


def dense_parameter_split(graph, n: int) -> Strategy | None:
    """Every Dense split `n` ways along its output features."""
    return _build(graph, n, lambda node, sp: _split_dim(sp, -1, n) if _types(node) == "dense" else None,
                  f"expert: Dense layers split along output features over {n} devices")


def conv_spatial_split(graph, n: int) -> Strategy | None:
    """Convolutions, poolings and batch norms split `n` ways along the image height (1-D ones along steps)."""
    kinds = {"conv2d", "pool2d", "batch_norm", "depthwise_conv2d"}
    steps = {"conv1d", "pool1d"}
    return _build(graph, n, lambda node, sp: _split_dim(sp, 1, n) if (_types(node) in kinds and len(sp.dims) == 4)
                  or _types(node) in steps else None, f"expert: convolutions split along height over {n} devices")


def column_row_mlp(graph, n: int) -> Strategy | None:
    """Dense(activation) -> Dense(linear) pairs: column split, then row split into partial sums."""
    consumers = graph.consumers()
    rows: set[int] = set()
    cols: set[int] = set()
    for node in graph.nodes:
        if _types(node) != "dense" or node.op.activation == "linear":
            continue
        nxt = consumers.get(node.outputs[0].uid, [])
        if len(nxt) == 1 and _types(nxt[0]) == "dense" and nxt[0].op.activation == "linear":
            cols.add(node.uid)
            rows.add(nxt[0].uid)

    def pick(node, space):
        if node.uid in cols:
            return _split_dim(space, -1, n)
        if node.uid in rows and space.reduce is not None and space.reduce >= n:
            return ParallelConfig((1,) * len(space.dims), tuple(range(n)), n)
        return None

    if not cols:
        return None
    return _build(graph, n, pick, f"expert: column-then-row split MLP blocks over {n} devices")


def embedding_placement(graph, n: int) -> Strategy | None:
    """Every embedding table whole on one device, round-robin over `n` devices."""
    order = [nd.uid for nd in graph.nodes if _types(nd) == "embedding"]
    if len(order) < 2:
        return None

    def pick(node, space):
        if node.uid not in order:
            return None
        return ParallelConfig((1,) * len(space.dims), (order.index(node.uid) % n,))

    return _build(graph, n, pick, f"expert: embedding tables placed on separate devices (of {n})")


EXPERTS = (dense_parameter_split, conv_spatial_split, column_row_mlp, embedding_placement)


def expert_strategies(graph, n: int) -> list[Strategy]:
    """Every expert strategy that applies to `graph` on `n` devices (none for one device)."""
    if n < 2:
        return []
    out = []
    for fn in EXPERTS:
        s = fn(graph, n)
        if s is not None and s not in out:
            out.append(s)
    return out
