"""Stable names for the op nodes of a graph, derived from the layer names.

A strategy file written for a script must fit it the next time it runs, so op names cannot come from
process-wide counters of graph objects. A layer that lowers to one op names it after itself (`dense_1`);
a layer that lowers to several names them `<layer>/<op type>` (`dense_1/matmul`, `dense_1/add`, with a
`_1`, `_2` suffix for repeats); ops recorded outside any layer (a loss, arithmetic between layers) are
named by their type, numbered in topological order (`loss`, `loss_1`, `add`); a copy the training graph
makes of a layer's op (`node.derived_from = (op node, role)`) is `<that op's name>/<role>` (`click/logits`). A layer called several
times (shared weights) names the ops of its later calls `<layer>@1/...`, `<layer>@2/...`.
"""

from __future__ import annotations

from collections import Counter

from flexflow_keras.ops.graph import OpGraph


def node_names(graph: OpGraph) -> dict[int, str]:
    """Node uid -> stable name, for every node of `graph` (names are unique within it)."""
    by_call: dict[tuple[int, int], list] = {}
    loose: list = []
    for node in graph.nodes:
        layer = getattr(node, "layer", None)
        if layer is None:
            loose.append(node)
            continue
        call = _call_of(layer, node)
        by_call.setdefault((id(layer), call), []).append(node)
    names: dict[int, str] = {}
    used: set[str] = set()
    calls_seen: dict[int, list[int]] = {}
    for lid, call in by_call:
        calls_seen.setdefault(lid, []).append(call)
    for (lid, call), nodes in by_call.items():
        layer = nodes[0].layer
        rank = sorted(calls_seen[lid]).index(call)
        base = layer.name if rank == 0 else f"{layer.name}@{rank}"
        if len(nodes) == 1:
            names[nodes[0].uid] = _unique(base, used)
            continue
        counts: Counter = Counter()
        for node in nodes:
            t = node.op.type_name
            k = counts[t]
            counts[t] += 1
            names[node.uid] = _unique(f"{base}/{t}" + (f"_{k}" if k else ""), used)
    counts = Counter()
    for node in loose:
        derived = getattr(node, "derived_from", None)  # a training-graph copy of a layer's op (its logits)
        if derived is not None and derived[0].uid in names:
            names[node.uid] = _unique(f"{names[derived[0].uid]}/{derived[1]}", used)
            continue
        t = node.op.type_name
        k = counts[t]
        counts[t] += 1
        names[node.uid] = _unique(t + (f"_{k}" if k else ""), used)
    return names


def _call_of(layer, node) -> int:
    """Which call of `layer` recorded `node`: the index of the layer's inbound node whose outputs the
    node leads to (0 when it cannot be told)."""
    calls = getattr(layer, "_inbound_nodes", None) or []
    if len(calls) <= 1:
        return 0
    for i, call in enumerate(calls):
        for t in getattr(call, "output_tensors", ()):
            if _reaches(node, t):
                return i
    return 0


def _reaches(node, tensor) -> bool:
    """Whether `tensor` is computed from `node` (walking producers back from the tensor)."""
    stack = [tensor.node] if tensor.node is not None else []
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if n is node:
            return True
        if n.uid in seen or n.uid < node.uid:
            continue
        seen.add(n.uid)
        stack.extend(t.node for t in n.inputs if t.node is not None)
    return False


def _unique(name: str, used: set[str]) -> str:
    out, k = name, 1
    while out in used:
        out = f"{name}_{k}"
        k += 1
    used.add(out)
    return out
