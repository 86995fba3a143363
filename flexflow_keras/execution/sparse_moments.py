"""Per-lookup moments of embedding tables' gradients, computed beside the gradients for the optimizer.

Keras 3's TensorFlow backend hands a table's gradient to the optimizer as `IndexedSlices` (one row per
lookup) and squares those rows before it sums the rows of a token looked up more than once, so Adam's
second moment grows by the sum of the squared gradients of a token's lookups, where the square of their
sum (the dense gradient's square) grows it by more and slows training (RMSprop, Adagrad, Nadam,
Adadelta, Ftrl, Lamb, Adafactor and Schedule-Free AdamW alike; Adamax takes absolute values). See
`Optimizer.sparse_moment_power`.

Which weights: a trainable table that only Embedding lookups read (`sparse_weight_gradient` ops with a
one-stage backward), without a regularizer (its dense gradient joins TensorFlow's sum), under an
optimizer whose update has such a moment. Each backward piece scatters its lookups' moment into a region
of the table's shape (`WeightStore.moment`), with the gradient's layout, privilege and zeroing (pieces that
share the table sum their moments as they sum their gradients), MPI ranks sum it as they sum the gradient
(and a strategy spanning the ranks moves and sums it as any reduction), and the update reads it
(execution/updates.py).
"""

from __future__ import annotations


def powers(engine) -> dict[int, int]:
    """Variable uid -> the power of the moment its update reads (see the module docstring)."""
    opt = engine.optimizer
    power = getattr(opt, "sparse_moment_power", None) if opt is not None else None
    out: dict[int, int] = {}
    if power is not None:
        lookups_only: dict[int, bool] = {}
        variables = {}
        for node in engine.tgraph.graph.nodes:
            for j, w in enumerate(node.weights):
                ok = j == 0 and getattr(node.op, "sparse_weight_gradient", False) and not node.op.two_stage_backward
                lookups_only[w.uid] = lookups_only.get(w.uid, True) and ok
                variables[w.uid] = w
        out = {uid: power for uid, ok in lookups_only.items()
               if ok and uid in engine.trainable_uids and getattr(variables[uid], "regularizer", None) is None}
    return out
