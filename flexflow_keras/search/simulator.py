"""The simulator: the task graph of one training step under a strategy, scheduled on a machine model.

For every op, one forward, statistics (BatchNorm) and backward task per piece on the piece's device, with
the durations of the cost model plus the runtime's per-task costs; the dependences the runtime derives
from the pieces' boxes (a consumer piece waits for the producer pieces whose output boxes overlap its
input box); a transfer over the route's links where producer and consumer work in different memories;
the reductions of gradients that several pieces produce for one input or weight (a fold per extra
device, on the target's device, after a transfer of the partial sum) and of split contractions' outputs;
zero fills on the node's utility processor; the optimizer updates (in pieces where the strategy splits a
weight over several devices and the update is element-wise), and the transfers that bring updated
weights to the other devices that read them; under MPI (a machine with `replicas`), the sum of every
trainable weight's gradient over the nodes on the measured network link before its update. The thread that issues launches issues one point task
after another, so no task starts before it is issued. `schedule.py` runs the list scheduling; the step
time is the last finish. Peak memory is counted per memory (instances of every box a device touches; on
a CPU node, the whole regions the runtime keeps in system memory).

Delta simulation: a step's task graph is built from per-op blocks (the op's pieces under its config,
with their durations and boxes) and per-edge piece overlaps, each cached by the configs involved, so
changing one op's config recomputes only that op's block and its edges; the timeline is then scheduled
again by the compiled scheduler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.gradients import plan_gradients
from flexflow_keras.ops.graph import batch_rows
from flexflow_keras.ops.naming import node_names
from flexflow_keras.ops.strategy import ParallelConfig, Strategy, node_space, sample_dims
from flexflow_keras.search import schedule
from flexflow_keras.search.blocks import Block, box_bytes, overlap, union_box
from flexflow_keras.search.costs import CostModel
from flexflow_keras.search.machine import MachineModel
from flexflow_keras.search.schedule import TaskList


@dataclass(frozen=True)
class SimResult:
    """A simulated step: its time (s), bytes per memory, the largest of those against its capacity."""

    step_time: float
    memory: tuple[int, ...]
    peak: int
    fits: bool
    tasks: int


class Simulator:
    """Simulates training steps of `graph` at `batch` on `machine` with `costs`.

    Args:
        graph: the training graph (model ops and per-sample losses).
        machine: the machine model; costs: its cost model.
        batch: the global batch size.
        trainable: uids of the trainable variables; seeds: uids of the per-sample loss tensors.
    """

    def __init__(self, graph, machine: MachineModel, costs: CostModel, batch: int, trainable: set[int],
                 seeds: set[int], n_slots: int = 0, elementwise_update: bool = True):
        self.graph, self.machine, self.costs, self.batch = graph, machine, costs, int(batch)
        self.names = node_names(graph)
        self.trainable = set(trainable)
        self.seeds = set(seeds)
        self.plan = plan_gradients(graph, self.seeds, self.trainable)
        self.n_slots = n_slots
        self.mode = (costs.threads_for(machine.n), machine.n > 1)  # (BLAS threads, pieces run at once)
        self.elementwise_update = elementwise_update
        self.shapes = {}
        for node in graph.nodes:
            self.shapes[node.uid] = par.tile_shapes(node, self.batch, True)
        self.producer = {}
        for node in graph.nodes:
            for o, t in enumerate(node.outputs):
                self.producer[t.uid] = (node, o)
        self.consumers: dict[int, list] = {}
        for node in graph.nodes:
            for k, t in enumerate(node.inputs):
                self.consumers.setdefault(t.uid, []).append((node, k))
        self.variables = {}
        for node in graph.nodes:
            for w in node.weights:
                self.variables.setdefault(w.uid, w)
        self._blocks: dict = {}
        self._edges: dict = {}
        self.evaluations = 0
        n_nodes = machine.nodes
        self.n_res = machine.n + n_nodes + len(machine.links)
        self.mem_capacity: dict[int, int] = {}
        for d in machine.devices:
            self.mem_capacity[d.memory] = self.mem_capacity.get(d.memory, 0) + d.capacity

    # --- caches ------------------------------------------------------------------------------------------
    @property
    def threads(self) -> int:
        return self.mode[0]

    def needs(self, node) -> tuple[tuple[bool, ...], tuple[bool, ...]]:
        """Which input and weight gradients the node's backward computes (the gradient plan)."""
        ins = self.plan.input_modes.get(node.uid)
        ws = self.plan.weight_modes.get(node.uid)
        return (tuple(m is not None for m in ins) if ins else (False,) * len(node.inputs),
                tuple(m is not None for m in ws) if ws else (False,) * len(node.weights))

    def set_mode(self, strategy: Strategy) -> None:
        """BLAS threads and concurrency follow the processors the strategy keeps busy."""
        used = len({d % self.machine.n for _, c in strategy.configs for d in c.devices}) or 1
        self.mode = (self.costs.threads_for(used), used > 1)

    def block(self, node, cfg: ParallelConfig) -> Block:
        key = (node.uid, cfg, self.mode)
        b = self._blocks.get(key)
        if b is None:
            b = self._blocks[key] = Block(self, node, cfg)
        return b

    def _pairs(self, prod: Block, o: int, cons: Block, k: int):
        """(producer piece, consumer piece, overlap elements) of output `o` feeding input `k` (cached)."""
        key = (prod.node.uid, prod.cfg, o, cons.node.uid, cons.cfg, k)
        hit = self._edges.get(key)
        if hit is None:
            hit = []
            for q, ct in enumerate(cons.tiles):
                cb = ct.inputs[k]
                for p, pt in enumerate(prod.tiles):
                    v = overlap(pt.outputs[o], cb)
                    if v:
                        hit.append((p, q, v))
            self._edges[key] = hit
        return hit

    # --- the step -------------------------------------------------------------------------------------------
    def simulate(self, strategy: Strategy) -> SimResult:
        """Simulate one training step under `strategy` (every op must have a config)."""
        self.evaluations += 1
        self.set_mode(strategy)
        m, costs = self.machine, self.costs
        o = costs.overheads()
        cpu = m.kind == "CPU"
        util_res = [m.n + k for k in range(m.nodes)]
        link_base = m.n + m.nodes
        blocks = {}
        for node in self.graph.nodes:
            cfg = strategy.get(self.names[node.uid])
            if cfg is None:
                raise KeyError(f"the strategy has no config for op '{self.names[node.uid]}'")
            blocks[node.uid] = self.block(node, cfg)
        T = (TaskList(self.n_res + m.n, self.n_res + m.n + 1, m.n, o.handoff) if o.gil
             else TaskList(n_devices=m.n, handoff=o.handoff))
        self._current = T
        self._homes = self._weight_homes(blocks)
        issue1 = o.issue

        def core_of(dev: int) -> int:
            return m.devices[dev].node if cpu else -1

        def transfer(src_mem: int, dst_mem: int, nbytes: float, preds) -> int | None:
            route = m.route(src_mem, dst_mem) if src_mem != dst_mem else ()
            if not route or nbytes <= 0:
                return None
            return T.add(m.transfer_time(src_mem, dst_mem, nbytes), [link_base + r for r in route], preds)

        memory = self._memory(blocks)
        # --- loader: one piece per io shard on the CPU devices (GPU machines: the host, then PCIe) ---
        io = self._io_degree(blocks)
        ranges = par.tile_boxes((self.batch,), (io,))
        in_bytes = sum(self._sample_bytes(t) for t in self.graph.inputs)
        loader = []
        for k, r in enumerate(ranges):
            rows = r[1][0] - r[0][0]
            dur = costs.mem_pass(in_bytes * rows, 2)
            if cpu:
                loader.append(T.add(dur, [k % m.n], [], core_of(k % m.n), issue1, o.task))
            else:
                loader.append(T.add(dur, [util_res[0]], [], -1, issue1, o.task))
        # --- forward ---
        out_ready: dict[tuple[int, int], list] = {}  # (node uid, output) -> [(piece task, box, mem)]
        fills: list[int] = []
        for node in self.graph.nodes:
            b = blocks[node.uid]
            preds_per_piece = [self._input_preds(node, b, k, q, blocks, out_ready, loader, ranges, transfer)
                               for q in range(b.n) for k in range(len(node.inputs))]
            per_piece = [[] for _ in range(b.n)]
            for idx, pr in enumerate(preds_per_piece):
                per_piece[idx // max(1, len(node.inputs))].extend(pr)
            wpreds = self._weight_reads(node, b, transfer)
            stats_tasks = []
            if b.tiles[0].stats:
                for q in range(b.n):
                    stats_tasks.append(T.add(b.stats_t[q], [b.devices[q]], per_piece[q] + wpreds[q],
                                             core_of(b.devices[q]), issue1 + o.issue_arg * b.nargs_f, b.py_s))
            fill = None
            if b.parts > 1:  # outputs are sums of partial results: zeroed first
                nb = sum(box_bytes(((0,) * len(s), s), 4) for s in self.shapes[node.uid].outputs)
                fill = T.add(costs.mem_pass(nb), [util_res[0]], [], core_of(0) if cpu else -1, issue1, o.task)
            pieces = []
            for q in range(b.n):
                preds = per_piece[q] + wpreds[q] + stats_tasks + ([fill] if fill is not None else [])
                pieces.append(T.add(b.fwd_t[q], [b.devices[q]], preds, core_of(b.devices[q]),
                                    issue1 + o.issue_arg * b.nargs_f, b.py_f))
            for oi, t in enumerate(node.outputs):
                entries = [(pieces[q], b.tiles[q].outputs[oi], b.mems[q]) for q in range(b.n)]
                if b.parts > 1:
                    entries = self._fold(T, entries, t.dtype, transfer, costs, core_of, b.devices)
                out_ready[(node.uid, oi)] = entries
        # --- backward ---
        grad_ready: dict[tuple[int, int], list] = {}  # (node uid, input k) -> [(task, box, mem)]
        wgrad: dict[int, list] = {}  # variable uid -> tasks completing its gradient
        bw_nodes = self.plan.backward_nodes
        for node in bw_nodes:
            b = blocks[node.uid]
            preds_q = [[] for _ in range(b.n)]
            for oi, t in enumerate(node.outputs):
                if t.uid in self.seeds:
                    for q in range(b.n):
                        preds_q[q].extend(loader)
                    continue
                for cnode, k in self.consumers.get(t.uid, ()):
                    entries = grad_ready.get((cnode.uid, k))
                    if entries is None:
                        continue
                    for q in range(b.n):
                        box = b.tiles[q].outputs[oi]
                        for task, gbox, gmem in entries:
                            if overlap(box, gbox):
                                x = transfer(gmem, b.mems[q], overlap(box, gbox) * 4, [task])
                                preds_q[q].append(task if x is None else x)
            in_modes = self.plan.input_modes[node.uid]
            w_modes = self.plan.weight_modes[node.uid]
            two = node.op.two_stage_backward
            bw_pieces = []
            if two:
                first = [T.add(b.bwd_t[q] / 2, [b.devices[q]], preds_q[q], core_of(b.devices[q]),
                               issue1 + o.issue_arg * b.nargs_b, b.py_b) for q in range(b.n)]
                sums = self._fold(T, [(first[q], b.tiles[q].weights[0], b.mems[q]) for q in range(b.n)],
                                  "float32", transfer, costs, core_of, b.devices) if any(b.shared_w) else []
                mid = [e[0] for e in sums] or first
                bw_pieces = [T.add(b.bwd_t[q] / 2, [b.devices[q]], mid, core_of(b.devices[q]),
                                   issue1 + o.issue_arg * b.nargs_b, b.py_b) for q in range(b.n)]
                stage_w = first
            else:
                bw_pieces = [T.add(b.bwd_t[q], [b.devices[q]], preds_q[q], core_of(b.devices[q]),
                                   issue1 + o.issue_arg * b.nargs_b, b.py_b) for q in range(b.n)]
                stage_w = bw_pieces
            for k, (t, mode) in enumerate(zip(node.inputs, in_modes, strict=True)):
                if mode is None:
                    continue
                entries = [(bw_pieces[q], b.tiles[q].inputs[k], b.mems[q]) for q in range(b.n)]
                if b.shared_in[k]:
                    if mode == "write":
                        nb = box_bytes(((0,) * len(self._shape_of(t)), self._shape_of(t)), 4)
                        fills.append(T.add(costs.mem_pass(nb), [util_res[0]], [],
                                           core_of(0) if cpu else -1, issue1, o.task))
                    entries = self._fold(T, entries, t.dtype, transfer, costs, core_of, b.devices)
                grad_ready[(node.uid, k)] = entries
            for j, (w, mode) in enumerate(zip(node.weights, w_modes, strict=True)):
                if mode in ("write", "add"):
                    entries = [(stage_w[q], b.tiles[q].weights[j], b.mems[q]) for q in range(b.n)]
                    if b.shared_w[j]:
                        entries = self._fold(T, entries, w.dtype, transfer, costs, core_of, b.devices)
                    wgrad.setdefault(w.uid, []).extend(entries)
        # --- updates (under MPI, after the sum of the weight's gradient over the nodes) ---
        net = link_base + m.replica_link if m.replicas > 1 else -1
        for uid, entries in wgrad.items():
            v = self.variables[uid]
            if net >= 0:  # started after its last gradient piece, waited by the update: a start and a wait task
                nbytes = int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize
                x = T.add(m.allreduce_time(nbytes), [net], [e[0] for e in entries], -1, 2 * issue1, 2 * o.task)
                entries = [(x, box, mem) for _, box, mem in entries]
            self._update(T, v, entries, blocks, core_of, transfer, issue1)
        finish = schedule.run(T, self.n_res + m.n + 2, m.cores if cpu else 1, m.nodes)
        step = float(finish.max()) if len(finish) else 0.0
        peak = max(memory.values()) if memory else 0
        fits = all(v <= self.mem_capacity.get(mem, v) for mem, v in memory.items())
        return SimResult(step, tuple(memory.get(k, 0) for k in sorted(self.mem_capacity)), peak, fits, len(T.dur))

    # --- pieces of the step ------------------------------------------------------------------------------
    def _shape_of(self, t):
        rows = batch_rows(t, self.batch)
        return tuple(rows if d is None else int(d) for d in t.shape)

    def _sample_bytes(self, t) -> int:
        return math.prod(int(d) for d in t.shape[1:]) * np.dtype(t.dtype).itemsize

    def _io_degree(self, blocks) -> int:
        for t in self.graph.outputs:
            if t.node is not None:
                b = blocks[t.node.uid]
                sd = sample_dims(node_space(t.node))
                if sd:
                    return max(1, min(b.cfg.degrees[sd[0]], self.batch))
        return 1

    def _input_preds(self, node, b: Block, k: int, q: int, blocks, out_ready, loader, ranges, transfer):
        t = node.inputs[k]
        box = b.tiles[q].inputs[k]
        src = self.producer.get(t.uid)
        itemsize = np.dtype(t.dtype).itemsize
        preds = []
        if src is None:  # a graph input or a label, written by the loader
            for li, r in enumerate(ranges):
                lo, hi = r[0][0], r[1][0]
                if box and min(hi, box[1][0]) > max(lo, box[0][0]):
                    rows = min(hi, box[1][0]) - max(lo, box[0][0])
                    mem_src = -1 if self.machine.kind != "CPU" else b.mems[q]
                    nbytes = rows * self._sample_bytes(t)
                    x = None
                    if mem_src != b.mems[q]:
                        x = self._host_to_device(b.devices[q], nbytes, [loader[li]], transfer)
                    preds.append(loader[li] if x is None else x)
            return preds
        pnode, o = src
        for task, obox, omem in out_ready[(pnode.uid, o)]:
            v = overlap(obox, box)
            if v:
                x = transfer(omem, b.mems[q], v * itemsize, [task])
                preds.append(task if x is None else x)
        return preds

    def _host_to_device(self, dev: int, nbytes: float, preds, transfer):
        """A transfer of loader data from host memory to device `dev` (None where it works in host memory)."""
        route = self.machine.host_links.get(dev, ())
        if not route or nbytes <= 0:
            return None
        links = [self.machine.links[r] for r in route]
        dur = sum(lk.latency for lk in links) + nbytes / min(lk.bandwidth for lk in links)
        base = self.machine.n + self.machine.nodes
        return self._current.add(dur, [base + r for r in route], preds)

    def _weight_reads(self, node, b: Block, transfer) -> list[list[int]]:
        """Per piece, the transfers bringing updated weight pieces from the memory where they were updated
        (the previous step's update, so they wait for nothing in this step)."""
        out = [[] for _ in range(b.n)]
        if self.machine.kind == "CPU" and self.machine.nodes == 1:
            return out
        for j, w in enumerate(node.weights):
            homes = self._homes.get(w.uid, {})
            for q in range(b.n):
                box = b.tiles[q].weights[j]
                mems = homes.get(box) or homes.get(None) or ()
                if b.mems[q] in mems or not mems:
                    continue
                x = transfer(mems[0], b.mems[q], box_bytes(box, np.dtype(w.dtype).itemsize), [])
                if x is not None:
                    out[q].append(x)
        return out

    def _weight_homes(self, blocks) -> dict[int, dict]:
        """Variable uid -> {box: memories updating it} ({None: [memory]} for a whole update)."""
        homes: dict[int, dict] = {}
        for node in self.graph.nodes:
            b = blocks[node.uid]
            for j, w in enumerate(node.weights):
                if w.uid in homes:
                    continue
                split = self._split_update(w, b, j)
                if split:
                    h: dict = {}
                    for box, dev in split:
                        h.setdefault(box, []).append(self.machine.devices[dev].memory)
                    homes[w.uid] = h
                else:
                    homes[w.uid] = {None: [b.mems[0]]}
        return homes

    def _split_update(self, v, b: Block, j: int):
        """[(box, device)] when `v` is updated in pieces (see the execution's rule), else None."""
        whole = par.whole(v.shape)
        devs = sorted({b.devices[q] for q in range(b.n) if b.tiles[q].weights[j] != whole})
        if not (len(devs) > 1 and self.elementwise_update and v.constraint is None and len(v.shape) > 0
                and v.uid in self.trainable):
            return None
        seen: dict = {}
        for q in range(b.n):
            seen.setdefault(b.tiles[q].weights[j], b.devices[q])
        return list(seen.items())

    def _fold(self, T: TaskList, entries, dtype, transfer, costs, core_of, devices):
        """Reduce partial results (`entries`: (task, box, memory) per piece, `devices` their devices).

        As the runtime does: the first piece's device reduces in place; every other device accumulates
        into a private buffer (zeroed first), which is brought to the target's memory and folded there
        after that device's last contribution. Returns what readers wait for."""
        target_dev, target_mem = devices[0], entries[0][2]
        by_dev: dict[int, list] = {}
        for (task, box, mem), dev in zip(entries, devices, strict=True):
            by_dev.setdefault(dev, []).append((task, box, mem))
        if len(by_dev) <= 1:
            return entries
        itemsize = np.dtype(dtype).itemsize
        o = costs.overheads()
        out = [e for e in by_dev[target_dev]]
        for dev, items in by_dev.items():
            if dev == target_dev:
                continue
            union = union_box([e[1] for e in items])
            nbytes = box_bytes(union, itemsize)
            tasks = [e[0] for e in items]
            x = transfer(items[0][2], target_mem, nbytes, tasks)
            dur = costs.mem_pass(nbytes, 4)  # zero the private buffer, then read both, write one
            f = T.add(dur, [target_dev], [x] if x is not None else tasks, core_of(target_dev), 0.0, o.task)
            out.append((f, union, target_mem))
        return out

    def _update(self, T: TaskList, v, entries, blocks, core_of, transfer, issue1) -> None:
        costs = self.costs
        o = costs.overheads()
        owner = next(node for node in self.graph.nodes if any(w.uid == v.uid for w in node.weights))
        b = blocks[owner.uid]
        j = next(i for i, w in enumerate(owner.weights) if w.uid == v.uid)
        deps = [e[0] for e in entries]
        nargs = 2 + self.n_slots
        split = self._split_update(v, b, j)
        pieces = split if split else [(par.whole(v.shape), b.devices[0])]
        for box, dev in pieces:
            shape = tuple(h - lo for lo, h in zip(*box, strict=True))
            mem = self.machine.devices[dev].memory
            pre = []
            for task, gbox, gmem in entries:  # gradient pieces computed in other memories come over
                v_ = overlap(gbox, box)
                if v_ and gmem != mem:
                    x = transfer(gmem, mem, v_ * np.dtype(v.dtype).itemsize, [task])
                    if x is not None:
                        pre.append(x)
            T.add(max(0.0, costs.update(shape, v.dtype, self.threads) - o.py_op), [dev], deps + pre, core_of(dev),
                  issue1 + o.issue_arg * nargs, o.task + o.task_arg * nargs + o.py_op)

    def _memory(self, blocks) -> dict[int, int]:
        """Bytes per memory: every distinct box of every region a piece touches there (its instances);
        on a CPU node the whole regions (the runtime's home arrays)."""
        m = self.machine
        usage: dict[int, int] = {}
        if m.kind == "CPU" and m.nodes == 1:
            total = 0
            for node in self.graph.nodes:
                s = self.shapes[node.uid]
                for shape, t in zip(s.outputs, node.outputs, strict=True):
                    total += 2 * math.prod(shape) * np.dtype(t.dtype).itemsize  # value and gradient
                for shape in s.saved:
                    total += math.prod(shape) * 4
            for v in self.variables.values():
                mult = 2 + self.n_slots if v.uid in self.trainable else 1
                total += mult * math.prod(v.shape) * np.dtype(v.dtype).itemsize
            usage[m.devices[0].memory] = total
            return usage
        seen: set = set()
        for node in self.graph.nodes:
            b = blocks[node.uid]
            for q in range(b.n):
                mem = b.mems[q]
                t = b.tiles[q]
                items = [(("a", x.uid), box, x.dtype, 2) for x, box in zip(node.inputs, t.inputs, strict=True)]
                items += [(("a", x.uid), box, x.dtype, 2) for x, box in zip(node.outputs, t.outputs, strict=True)]
                items += [(("s", node.uid, i), box, "float32", 1) for i, box in enumerate(t.saved)]
                for w, box in zip(node.weights, t.weights, strict=True):
                    mult = 2 + self.n_slots if w.uid in self.trainable else 1
                    items.append((("w", w.uid), box, w.dtype, mult))
                for key, box, dtype, mult in items:
                    k = (mem, key, box)
                    if k in seen:
                        continue
                    seen.add(k)
                    usage[mem] = usage.get(mem, 0) + mult * box_bytes(box, np.dtype(dtype).itemsize)
        return usage


