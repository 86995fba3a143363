"""The optimizer updates of a training step and, across MPI ranks, the sums of gradients before them:
which update tasks a `StepProgram` launches, after which backward launch, on which processors.

A weight the strategy splits across processors is updated in pieces where they were computed; the
others in one task per variable or one task for all (see `prepare_updates`). Across MPI ranks every
written gradient is summed over the ranks by a start task after its last writer and a finish task
before the updates, which then all follow the whole backward pass (`prepare_rank_sums`). The program's
`updates`, `mpi_starts` and `mpi_finish` hold the result; `StepProgram.run` launches them.
"""

from __future__ import annotations

import math

from flexflow_keras.execution import distributed
from flexflow_keras.execution import tasks as T
from flexflow_keras.execution.layout import NodeLayout
from flexflow_keras.execution.store import arg_for
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.strategy import devices_used
from runtime import comm


def owners(prog) -> dict:
    """Variable uid -> (first node reading it, its weight index there): whose layout places it."""
    out = {}
    for node in prog.engine.tgraph.graph.nodes:
        for j, w in enumerate(node.weights):
            out.setdefault(w.uid, (node, j))
    return out


def prepare_updates(prog) -> None:
    """Optimizer update tasks, issued right after the backward task that completes their gradients.

    A weight the strategy splits across processors is updated in pieces on those processors (the
    op's own pieces of it, in place in their exact instances), when the update is element-wise
    (no clipnorm, no constraint or non-element-wise regularizer); so is a replicated weight whose
    gradient is summed from parts (grad_parts.py), in the tiles of that sum. A whole weight: with one BLAS thread
    per shard (degree >= cores) there is one task per variable, so the last layers' updates overlap
    the remaining backward work on the other processors (measured: CNN b64 on 2 cores ~1.4k -> ~1.7k
    samples/s); when a shard's kernels already use every core (degree 1 on 2 cores), overlapping
    updates only oversubscribe them (MLP b64: 19.7k -> 15.5k samples/s in one A/B run), so one task
    updates every variable; likewise when the optimizer needs all gradients at once
    (global_clipnorm)."""
    e = prog.engine
    if not e.weights.trainable or e.optimizer is None:
        return
    written = [v for v in e.weights.trainable if v.uid in prog._last_writer]
    if not written:
        return
    owner_of = owners(prog)
    opt = e.optimizer
    elementwise = getattr(opt, "elementwise", False) and not getattr(opt, "needs_all_variables", False)
    whole = []
    for v in written:
        node, j = owner_of[v.uid]
        lay = prog.layouts[node.uid]
        devices = sorted({lay.placement[k] for k, t in enumerate(lay.tiles)
                          if t.weights[j] != par.whole(v.shape)}, key=lambda p: p.uid)
        splittable = (elementwise and v.constraint is None and len(v.shape) > 0 and
                      (v.regularizer is None or getattr(v.regularizer, "elementwise", False)))
        summed = prog.part_tiles.get(v.uid)  # a gradient summed from parts, in tiles (grad_parts.py)
        if len(devices) > 1 and splittable:
            _tiled_update(prog, v, *_own_pieces(lay, j))
        elif summed is not None and len(summed[0]) > 1 and splittable:
            _tiled_update(prog, v, *summed)
        else:
            whole.append((v, lay))
    cores = comm.host_cores()  # shared out among MPI ranks on this host
    used = devices_used(prog.strategy, len(e.processors))
    split = cores // used <= 1 and not getattr(opt, "needs_all_variables", False)
    if split:
        groups = [[item] for item in balanced(whole)]
    else:
        groups = [[(v, lay.placement[0]) for v, lay in whole]] if whole else []
    for items in groups:
        vs = [v for v, _ in items]
        utask = update_task(prog, vs)
        args = [e.weights.value[v.uid] for v in vs] + [e.weights.grad[v.uid] for v in vs]
        for v in vs:
            args += e.weights.slots[v.uid]
        args += [e.weights.moment(v) for v in vs if v.uid in prog.moments]
        after = max(prog._last_writer[v.uid] for v in vs)
        prog.updates.setdefault(after, []).append((utask, (1,), args, (items[0][1],)))


def balanced(whole) -> list:
    """(variable, processor) for one update task per variable: each on the processor of its layer's
    layout that has the fewest elements to update so far, the largest variables first (ties: the
    lowest uid; deterministic). With data parallelism every processor runs the same backward work, so
    the updates are what differs: placing them all on the first processor (as before) left it with
    the MNIST CNN's 1.2M-element dense update, 1.2 ms of a 24 ms step, while the other waited."""
    load: dict = {}
    out = []
    for v, lay in sorted(whole, key=lambda item: -math.prod(item[0].shape)):
        devices = sorted(set(lay.placement), key=lambda p: p.uid)
        proc = min(devices, key=lambda p: (load.get(p.uid, 0), p.uid))
        load[proc.uid] = load.get(proc.uid, 0) + math.prod(v.shape)
        out.append((v, proc))
    return out


def prepare_rank_sums(prog) -> None:
    """Sum every written gradient over the ranks: started after its last writer, waited (with every
    update moved after the whole backward pass, so the sums overlap the rest of it) before the updates."""
    e = prog.engine
    last = len(prog.backward) - 1
    owner_of = owners(prog)
    for v in e.weights.trainable:
        if v.uid not in prog._last_writer:
            continue
        node, _ = owner_of[v.uid]
        proc = prog.layouts[node.uid].placement[0]
        start, finish = distributed.reduce_tasks(e, ("grad", v.uid), f"grad_{v.name}")
        region = e.weights.grad[v.uid]
        first = prog._stage_one.get(v.uid)
        if first is not None and prog._last_writer[v.uid] == first + 1:
            # a two-stage backward's second stage (BatchNorm's input gradient) reads the whole
            # batch's sums of its first stage: summed over the ranks before it runs
            prog.mpi_starts.setdefault(first, []).extend([(start, region, proc), (finish, region, proc)])
            continue
        prog.mpi_starts.setdefault(prog._last_writer[v.uid], []).append((start, region, proc))
        prog.mpi_finish.append((finish, region, proc))
        if v.uid in prog.moments:  # the per-lookup moment is summed over the ranks as the gradient is
            mstart, mfinish = distributed.reduce_tasks(e, ("moment", v.uid), f"moment_{v.name}")
            mregion = e.weights.moment(v)
            prog.mpi_starts[prog._last_writer[v.uid]].append((mstart, mregion, proc))
            prog.mpi_finish.append((mfinish, mregion, proc))
    moved = [u for i in sorted(prog.updates) for u in prog.updates[i]]
    prog.updates = {last: moved} if moved else {}


def update_task(prog, vs):
    e = prog.engine
    n_slots = tuple(len(e.weights.slots[v.uid]) for v in vs)
    regularized = any(v.regularizer is not None for v in vs)
    moments = tuple(v.uid in prog.moments for v in vs)
    return e.cached(("update", tuple(v.uid for v in vs), n_slots, regularized, moments),
                    T.update_task, e.optimizer, vs, n_slots, regularized, moments)


def _own_pieces(lay: NodeLayout, j: int):
    """(boxes, processors): the op's own pieces of its weight j, each where it was computed."""
    seen: dict = {}
    for k, t in enumerate(lay.tiles):
        seen.setdefault(t.weights[j], lay.placement[k])
    return list(seen), list(seen.values())


def _tiled_update(prog, v, boxes, procs) -> None:
    """Update `v` in the pieces `boxes`, piece k on processor procs[k]."""
    e = prog.engine
    colors = [(k,) for k in range(len(boxes))]
    dom = (len(boxes),)

    def part(region):
        return arg_for(prog.store.parts, region, boxes, colors, dom)

    args = [part(e.weights.value[v.uid]), part(e.weights.grad[v.uid])]
    args += [part(r) for r in e.weights.slots[v.uid]]
    if v.uid in prog.moments:
        args.append(part(e.weights.moment(v)))
    prog.updates.setdefault(prog._last_writer[v.uid], []).append(
        (update_task(prog, [v]), dom, args, tuple(procs)))
