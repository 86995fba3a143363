"""Which tensors need gradients, which nodes run backward, and who overwrites or accumulates.

Computed once per training graph (a pure function of the graph, read by the execution and by the
search's simulator). Backward visits nodes in reverse topological order; the first node to write a
gradient overwrites it ("write") and later ones add into it ("add"). Where a strategy's pieces share an
input or a weight, the execution turns those into reductions (`+`) into a buffer zeroed first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flexflow_keras.ops.graph import OpGraph, OpNode


@dataclass
class GradPlan:
    backward_nodes: list[OpNode] = field(default_factory=list)  # reverse topological order
    # node uid -> per input: None (no grad), "write" (first writer) or "add"
    input_modes: dict[int, list[str | None]] = field(default_factory=dict)
    weight_modes: dict[int, list[str | None]] = field(default_factory=dict)
    has_grad: set[int] = field(default_factory=set)  # tensor uids that receive a gradient


def plan_gradients(graph: OpGraph, seeds: set[int], trainable: set[int]) -> GradPlan:
    """`seeds`: uids of per-sample loss tensors; `trainable`: uids of trainable variables."""
    requires: set[int] = set()
    for node in graph.nodes:
        needs = any(w.uid in trainable for w in node.weights) or any(
            t.uid in requires and node.op.is_differentiable(i) for i, t in enumerate(node.inputs))
        if needs:
            requires.update(t.uid for t in node.outputs)
    plan = GradPlan(has_grad=set(seeds))
    written_w: set[int] = set()
    for node in reversed(graph.nodes):
        if not any(t.uid in plan.has_grad for t in node.outputs):
            continue
        in_modes: list[str | None] = []
        for i, t in enumerate(node.inputs):
            if t.uid in requires and node.op.is_differentiable(i):
                in_modes.append("add" if t.uid in plan.has_grad else "write")
                plan.has_grad.add(t.uid)
            else:
                in_modes.append(None)
        w_modes: list[str | None] = []
        required = set(getattr(node.op, "required_grad_weights", ()) if node.op.two_stage_backward else ())
        for j, w in enumerate(node.weights):
            if w.uid in trainable:
                w_modes.append("add" if w.uid in written_w else "write")
                written_w.add(w.uid)
            elif j in required:
                # a frozen weight whose gradient the op's second stage still reads (BatchNorm's dgamma
                # with scale=False): a scratch buffer the optimizer never sees
                w_modes.append("scratch")
            else:
                w_modes.append(None)
        if any(m is not None for m in in_modes) or any(m is not None for m in w_modes):
            plan.backward_nodes.append(node)
            plan.input_modes[node.uid] = in_modes
            plan.weight_modes[node.uid] = w_modes
    return plan
