"""One step's launch sequence for one strategy and batch size: train, evaluate or predict.

`StepProgram` lowers the training graph under a `Strategy` onto the runtime: per op a `NodeLayout`
(launch domain, tiles, placement), and per launch the partitions of its regions from the tiles. Weights
are split along the dims the tiles split them and replicated along the others; where the pieces of a
launch share elements of an input or a weight, their gradients are reductions (`Reduce("+")`, the
region zeroed first when they are the first writer), and so are the outputs of an op whose contraction
is split into partial results. The runtime derives every dependence and brings the data where a
consumer reads a tensor in another layout than its producer wrote it.

`run` issues the launches inside `rtm.trace(...)`: the first step records the dependence graph and the
mapping, and every later step with the same batch size and strategy replays it. A training step in
`fit` is issued without waiting for it (`wait=False`; the loop reads its results later, see
execution/overlap.py); evaluation, prediction and the strategy search's measurements wait.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from flexflow_keras.execution import buffer_reuse, distributed, grad_parts, sparse_moments, updates
from flexflow_keras.execution import tasks as T
from flexflow_keras.execution.layout import NodeLayout
from flexflow_keras.execution.store import BatchStore, arg_for, is_batched
from flexflow_keras.execution.tasks import RW, SUM, WD
from flexflow_keras.ops import parallel as par
from runtime import POINT, comm
from runtime.machine import ProcKind

_MODES = ("train", "eval", "predict")
# the modes whose programs a store's plan holds for, by the mode that made it: each issues a subset of the
# planning mode's launches in the same order (eval: training's forward; predict: the model's nodes of it)
_COVERS = {"train": _MODES, "eval": ("eval", "predict"), "predict": ("predict",)}


class StepProgram:
    """The launches of one mode for one batch size under one strategy."""

    def __init__(self, engine, mode: str, batch: int, store: BatchStore, strategy, trace_id: int,
                 global_batch: int | None = None, across_ranks: bool = False):
        if mode not in _MODES:
            raise ValueError(f"StepProgram mode must be one of {_MODES}, received {mode!r}")
        self.engine, self.mode, self.batch, self.store, self.strategy = engine, mode, batch, store, strategy
        # across MPI ranks (execution/distributed.py): this rank's shard of a global batch; in training,
        # gradients and batch statistics summed over the ranks
        self.global_batch = int(global_batch or batch)
        self.across_ranks = bool(across_ranks)
        self.mpi_starts: dict[int, list] = {}  # backward entry index -> reductions started after it
        self.mpi_finish: list = []  # reductions waited before the updates
        self.trace_name = (f"{engine.name}.{mode}_step_b{batch}_s{trace_id}" +
                           (f"_g{self.global_batch}_mpi" if self.across_ranks else ""))
        tg = engine.tgraph
        self.loss_outputs = [i for i, t in enumerate(tg.per_sample_losses) if t is not None]
        self._prepare()

    # ---------------------------------------------------------------------------------------------------
    def _layout(self, node, training: bool) -> NodeLayout:
        lay = self.layouts.get(node.uid)
        if lay is None:
            e = self.engine
            name = e.node_names[node.uid]
            lay = self.layouts[node.uid] = NodeLayout(node, name, self.strategy.get(name), self.store,
                                                      e.layout_procs, training)
        return lay

    def _batch_arg(self, region, degree: int):
        boxes = par.tile_boxes(region.shape, (degree,) + (1,) * (len(region.shape) - 1))
        return arg_for(self.store.parts, region, boxes, [(k,) for k in range(degree)], (degree,))

    def _prepare(self) -> None:
        e, s, tg = self.engine, self.store, self.engine.tgraph
        training = self.mode == "train"
        if s.planned_by is not None and self.mode not in _COVERS[s.planned_by]:
            buffer_reuse.restore(s)  # the store's plan does not hold for this mode: plan again (see there)
            s.planned_by = None
        with_labels = self.mode != "predict"
        self.layouts: dict[int, NodeLayout] = {}
        nodes = tg.graph.nodes if self.mode != "predict" else e.predict_nodes
        for n in nodes:
            self._layout(n, training)
        # The loader and the metric partial sums split the batch like the loss (or the first op).
        outs = [t for t in tg.per_sample_losses if t is not None] + list(tg.model_outputs)
        ref = [self.layouts[t.node.uid] for t in outs if t.node is not None and t.node.uid in self.layouts]
        ref = ref or list(self.layouts.values())
        lay0 = ref[0] if ref else None
        degree = 1
        if lay0 is not None and lay0.sample_dim is not None:
            degree = lay0.config.degrees[lay0.sample_dim]
        self.io_degree = max(1, min(degree, self.batch))
        d = self.io_degree
        bounds = par.tile_boxes((self.batch,), (d,))
        self.ranges = {(k,): (b[0][0], b[1][0]) for k, b in enumerate(bounds)}
        self.x_args = [self._batch_arg(s.act(t), d) for t in tg.model_inputs]
        self.y_args = [self._batch_arg(s.act(tg.labels[i]), d) for i in self.loss_outputs] if with_labels else []
        seeds = [s.grad(tg.per_sample_losses[i]) for i in self.loss_outputs]
        # The loader writes each loss's seed, d(loss)/d(per-sample loss) = sample_weight / elements
        # (sample_weight is ones when the user gave none), so weighted and unweighted steps are one trace.
        self.numels = tuple(int(np.prod(s.act(tg.per_sample_losses[i]).shape)) // max(self.batch, 1) *
                            self.global_batch for i in self.loss_outputs)
        # compile(loss_weights=...): each loss's seed is also scaled by its weight, so the gradient is that
        # of the weighted total (the metric task divides it out again for the logs)
        by_output = {spec.output_index: float(spec.weight) for spec in tg.loss_specs}
        self.loss_weights = tuple(by_output.get(i, 1.0) for i in self.loss_outputs)
        self.seed_scales = tuple(w / n for w, n in zip(self.loss_weights, self.numels, strict=True))
        label_at = tuple(len(self.x_args) + i for i in self.loss_outputs) if with_labels else ()
        # the losses that weigh their samples themselves (a compute_loss override handed the weights)
        sws = tg.sample_weights or (None,) * len(tg.model_outputs)
        weight_at = tuple(k for k, i in enumerate(self.loss_outputs) if sws[i] is not None) if with_labels else ()
        self.w_args = [self._batch_arg(s.act(sws[self.loss_outputs[k]]), d) for k in weight_at]
        self.loader = e.cached(("loader", len(self.x_args), label_at, with_labels, weight_at),
                               T.loader_task, len(self.x_args), label_at, with_labels, weight_at)
        self.loader_args = [*self.x_args, *self.y_args,
                            *([self._batch_arg(r, d) for r in seeds] if with_labels else []), *self.w_args]
        self.forward = [self._forward_entry(n, training) for n in nodes]
        self.state_copies = self._state_copies(nodes)
        self.backward = []
        self.zero_fill: list = []
        self.zeroing = None  # (task, processor) zeroing all of zero_fill in one launch
        self.part_sums: dict[int, list] = {}  # backward entry index -> its gradients' sums of parts
        self.part_tiles: dict[int, tuple] = {}  # variable uid -> (boxes, processors) of those sums
        self.updates: dict[int, list] = {}  # backward entry index -> update launches after it
        self._last_writer: dict[int, int] = {}  # variable uid -> last backward entry writing its grad
        self._stage_one: dict[int, int] = {}  # variable uid -> the two-stage backward entry computing it
        # variable uid -> power of the per-lookup moment its update reads (execution/sparse_moments.py)
        self.moments: dict[int, int] = sparse_moments.powers(e) if training else {}
        if training:
            self._prepare_backward()
        self._share_buffers(nodes, training)
        if training:
            updates.prepare_updates(self)
            if self.across_ranks:
                updates.prepare_rank_sums(self)
        self.metrics = None
        if with_labels and self.loss_outputs:
            args = []
            masks = tg.masks or (None,) * len(tg.model_outputs)
            for i in self.loss_outputs:
                lt = tg.per_sample_losses[i]
                args += [self._batch_arg(r, d) for r in (s.act(lt), s.grads[lt.uid], s.act(tg.labels[i]),
                                                         s.act(tg.model_outputs[i]))]
            masked = tuple(masks[i] is not None for i in self.loss_outputs)
            args += [self._batch_arg(s.act(masks[i]), d) for i in self.loss_outputs if masks[i] is not None]
            mlists = [e.metric_objects[i] for i in self.loss_outputs]
            # a compute_metrics override (models/metrics_hook.py) sees the inputs too
            n_in = len(tg.model_inputs) if any(getattr(m, "_ff_whole_batch", False) for ms in mlists for m in ms) else 0
            args += [self._batch_arg(s.act(t), d) for t in tg.model_inputs[:n_in]]
            args += self.w_args
            # the tensors of the metric updates a compute_loss override recorded (metrics/symbolic_updates.py)
            unique = list({t.uid: t for t in tg.recorded_tensors}.values())
            batched = tuple(is_batched(t.spec) for t in unique)
            rec_index = tuple(next(j for j, u in enumerate(unique) if u.uid == t.uid) for t in tg.recorded_tensors)
            args += [self._batch_arg(s.act(t), d) if b else s.act(t) for t, b in zip(unique, batched, strict=True)]
            # the logits of softmax and sigmoid outputs whose metrics may take a crossentropy (metrics/logits.py)
            logits = tg.metric_logits or (None,) * len(tg.model_outputs)
            logit_at = tuple(k for k, i in enumerate(self.loss_outputs) if logits[i] is not None)
            args += [self._batch_arg(s.act(logits[self.loss_outputs[k]]), d) for k in logit_at]
            key = ("metrics", tuple(self.loss_outputs), self.numels, self.loss_weights, masked, n_in, weight_at,
                   logit_at) + ((id(tg), self.global_batch) if tg.recorded else ())
            self.metrics = (e.cached(key, T.metrics_task, len(self.loss_outputs), mlists, self.numels,
                                     self.loss_weights, masked, n_in, weight_at, tg.recorded, batched, rec_index,
                                     self.global_batch, logit_at), args)

    def _state_copies(self, nodes) -> list:
        """(task, final-state region, kept-state region) of every stateful recurrent layer's node: its final
        states become the next batch's initial ones, in every mode (Keras 3 keeps them in predict too)."""
        e, s = self.engine, self.store
        out = []
        for node in nodes:
            layer = getattr(node, "layer", None)
            kept = getattr(node, "kept_states", None)  # set by a stateful layer's call (layers/recurrent.py)
            if not kept or getattr(node.op, "type_name", "") != "recurrent" or len(node.outputs) != 1 + len(kept):
                continue
            if kept[0].shape[0] != self.batch:
                raise ValueError(
                    f"Layer '{getattr(layer, 'name', node.name)}' is stateful with batch size {kept[0].shape[0]} (the state of each sample "
                    f"slot is kept for the next batch), but a batch of {self.batch} samples reached it. Pass "
                    f"batch_size={kept[0].shape[0]} to fit/evaluate/predict, with a sample count divisible by it "
                    f"(Keras 3 requires the same).")
            task = e.cached(("state_copy",), T.state_copy_task)
            out += [(task, s.act(t), e.weights.value[v.uid]) for t, v in zip(node.outputs[1:], kept, strict=True)]
        return out

    def _forward_entry(self, node, training: bool):
        e, s = self.engine, self.store
        lay = self.layouts[node.uid]
        saved = s.node_saved(node)
        stats = s.node_stats(node) if training else []
        out_priv = SUM if lay.parts > 1 else WD
        ftask = e.cached(("fwd", node.uid, len(saved), len(stats), repr(out_priv)),
                         T.forward_task, node, lay.name, len(saved), len(stats), out_priv)
        ins = [lay.arg(s.act(t), "inputs", i) for i, t in enumerate(node.inputs)]
        ws = [lay.arg(e.weights.value[w.uid], "weights", j) for j, w in enumerate(node.weights)]
        args = ins + ws + [lay.arg(s.act(t), "outputs", i) for i, t in enumerate(node.outputs)]
        args += [lay.arg(r, "saved", i) for i, r in enumerate(saved)]
        st_args = [lay.arg(r, "stats", i) for i, r in enumerate(stats)]
        args += st_args
        fills = [s.act(t) for t in node.outputs] if lay.parts > 1 else []
        pre = post = None
        if stats:
            reduce = any(lay.shared(a) for a in st_args)
            stask = e.cached(("stats", node.uid, len(stats), reduce), T.stats_task, node, lay.name, len(stats),
                             reduce)
            pre = (stask, ins + ws + st_args, stats)
            mask = tuple(w.uid not in e.trainable_uids for w in node.weights)
            utask = e.cached(("state", node.uid, len(stats), mask),
                             T.state_update_task, node, lay.name, len(stats), mask)
            post = (utask, list(stats) + [e.weights.value[w.uid] for w in node.weights], lay.placement[0])
        return lay, ftask, args, fills, pre, post

    def _grad_priv(self, lay: NodeLayout, arg, mode: str | None, region, fills: dict):
        if mode is None:
            return None
        if lay.shared(arg):
            if mode in ("write", "scratch"):
                fills[region.uid] = region
            return SUM
        return RW if mode == "add" else WD

    def _prepare_backward(self) -> None:
        e, s = self.engine, self.store
        gp = e.grad_plan
        fills: dict[int, object] = {}
        for node in gp.backward_nodes:
            lay = self.layouts[node.uid]
            saved = s.node_saved(node)
            stats = s.node_stats(node)
            gin, gi_args = [], []
            for i, (t, m) in enumerate(zip(node.inputs, gp.input_modes[node.uid], strict=True)):
                arg = lay.arg(s.grad(t), "inputs", i) if m is not None else None
                p = self._grad_priv(lay, arg, m, s.grads.get(t.uid), fills)
                gin.append(p)
                if p is not None:
                    gi_args.append(arg)
            gw, gw_args, gw_parts, sums, gw_read = [], [], [], [], []  # gw_read: stage two reads the sums
            moments, m_args = [], []  # (j, privilege, power) and regions of per-lookup moments
            for j, (w, m) in enumerate(zip(node.weights, gp.weight_modes[node.uid], strict=True)):
                gw_parts.append(False)
                if m is None:
                    gw.append(None)
                    continue
                region = e.weights.scratch_grad(w) if m == "scratch" else e.weights.grad[w.uid]
                arg = lay.arg(region, "weights", j)
                power = self.moments.get(w.uid) if m in ("write", "add") and not node.op.two_stage_backward else None
                if grad_parts.eligible(self, lay, arg, m, w):
                    gw_parts[j] = True
                    gw.append(WD)
                    gw_args.append(grad_parts.part_arg(self, lay, w))
                    gw_read.append(arg)
                    sums.append(grad_parts.sum_launch(self, lay, w))
                    if power is not None:  # the moment in parts too, summed in the same tiles
                        moments.append((j, WD, power, True))
                        m_args.append(grad_parts.part_arg(self, lay, w, moment=True))
                        sums.append(grad_parts.sum_launch(self, lay, w, moment=True))
                    continue
                if power is not None:  # the moment follows the gradient's layout, privilege and zeroing
                    mregion = e.weights.moment(w)
                    marg = lay.arg(mregion, "weights", j)
                    moments.append((j, self._grad_priv(lay, marg, m, mregion, fills), power, False))
                    m_args.append(marg)
                gw.append(self._grad_priv(lay, arg, m, region, fills))
                gw_args.append(arg)
                gw_read.append(arg)
            gw_parts = tuple(gw_parts) if any(gw_parts) else ()
            unread = self._unread(node, lay)
            base = [lay.arg(s.act(t), "inputs", i) for i, t in enumerate(node.inputs)]
            base += [lay.arg(e.weights.value[w.uid], "weights", j) for j, w in enumerate(node.weights)]
            base += [lay.arg(s.act(t), "outputs", i) for i, t in enumerate(node.outputs)]
            base = [a for k, a in enumerate(base) if k not in unread]
            base += [lay.arg(r, "saved", i) for i, r in enumerate(saved)]
            base += [lay.arg(r, "stats", i) for i, r in enumerate(stats)]
            for i, t in enumerate(node.outputs):
                if t.uid not in s.grads:
                    e.rtm.fill(s.grad(t), 0.0)  # an output nobody differentiates: zero gradient
                    s.filled_grads.add(s.grads[t.uid].uid)
                base.append(lay.arg(s.grads[t.uid], "outputs", i))
            key = (node.uid, len(saved), len(stats), tuple(map(repr, gin)), tuple(map(repr, gw)), gw_parts,
                   tuple((j, repr(p), power, in_parts) for j, p, power, in_parts in moments), unread)
            if node.op.two_stage_backward:
                t1 = e.cached(("bw_w",) + key, T.backward_task, node, lay.name, len(saved), len(stats), gin, gw,
                              "weights", gw_parts, (), unread)
                t2 = e.cached(("bw_i",) + key, T.backward_task, node, lay.name, len(saved), len(stats), gin, gw,
                              "inputs", (), (), unread)
                self.backward.append((lay, t1, base + gw_args))
                if sums:
                    self.part_sums[len(self.backward) - 1] = sums  # before stage two, which reads the sums
                for w, m in zip(node.weights, gp.weight_modes[node.uid], strict=True):
                    if m in ("write", "add"):
                        self._stage_one[w.uid] = len(self.backward) - 1  # stage two reads these sums
                self.backward.append((lay, t2, base + gw_read + gi_args))
            else:
                t = e.cached(("bw",) + key, T.backward_task, node, lay.name, len(saved), len(stats), gin, gw,
                             "both", gw_parts, tuple(moments), unread)
                self.backward.append((lay, t, base + gi_args + gw_args + m_args))
                if sums:
                    self.part_sums[len(self.backward) - 1] = sums
            for w, m in zip(node.weights, gp.weight_modes[node.uid], strict=True):
                if m in ("write", "add"):
                    self._last_writer[w.uid] = len(self.backward) - 1
        self.zero_fill = list(fills.values())
        procs = {p for lay in self.layouts.values() for p in lay.placement}
        if self.zero_fill and e.spanning is None and all(p.kind is ProcKind.CPU for p in procs):
            # one task zeroes them all, on the first layer's processor, instead of one runtime fill per
            # region on the utility processor: each fill took the GIL on a third thread that the OS
            # preempted while the two workers ran (CIFAR CNN: 0.44 ms of fills a step for 5 KB)
            first = self.forward[0][0].placement[0] if self.forward else sorted(procs, key=lambda p: p.uid)[0]
            self.zeroing = (e.cached(("zero", len(self.zero_fill)), T.zero_task, len(self.zero_fill)), first)

    def _unread(self, node, lay: NodeLayout) -> tuple[int, ...]:
        """Positions among the node's inputs, weights and outputs that its backward does not read
        (`Op.backward_reads`): left out of the launch, so their buffers may be shared once the forward is
        done with them. Not when the strategy spans nodes (there every argument is announced to the other
        nodes)."""
        if self.engine.spanning is not None:
            return ()
        reads_in, reads_out = node.op.backward_reads()
        n_in, n_w, n_out = len(node.inputs), len(node.weights), len(node.outputs)
        ins = tuple(reads_in) if isinstance(reads_in, tuple | list) else (reads_in,) * n_in
        outs = tuple(reads_out) if isinstance(reads_out, tuple | list) else (reads_out,) * n_out
        return tuple(i for i in range(n_in) if not ins[i]) + tuple(n_in + n_w + i for i in range(n_out) if not outs[i])

    def _share_buffers(self, nodes, training: bool) -> None:
        """Give the buffers that are never live at once one region (execution/buffer_reuse.py): in training
        activations, saved buffers and activation gradients, in evaluation and prediction activations
        (each dead at its last forward reader); then build the passes again on those regions. Once per
        store, by its first program: a later program on it whose launches are a subset in the same order
        (an evaluation or a prediction after training, a prediction after an evaluation; another training
        program) finds them shared already; any other puts the store's own regions back and plans again."""
        s = self.store
        if s.planned_by is not None:
            return
        s.planned_by = self.mode
        s.originals = buffer_reuse.snapshot(s)
        spans = buffer_reuse.touches(buffer_reuse.issue_order(self))
        with_acts = self.engine.spanning is None and self.engine.predict_in_train_order
        chosen = buffer_reuse.plan(buffer_reuse.candidates(s, with_acts), spans,
                                   buffer_reuse.fixed_regions(self))
        if not buffer_reuse.apply(s, chosen):
            return
        self.forward = [self._forward_entry(n, training) for n in nodes]
        self.state_copies = self._state_copies(nodes)
        if training:
            self.backward, self.zero_fill, self.zeroing = [], [], None
            self.part_sums, self.part_tiles, self._last_writer, self._stage_one = {}, {}, {}, {}
            self._prepare_backward()

    def run(self, sources, rows, step: int, seed: int, iteration: int = 0, lr: float = 0.0, wait: bool = True):
        """Issue one step. Returns (metrics FutureMap or None, the penalty FutureMaps of the updates of
        regularized variables).

        `wait=False` returns as soon as the step is issued (a training step the loop collects later:
        execution/overlap.py); `last_nodes` then holds the step's task nodes, whose first failure
        `overlap.raise_first_failure` raises when a read of its results fails."""
        rtm, gb = self.engine.rtm, self.global_batch
        fm, pen = None, []
        training = self.mode == "train"
        if self.state_copies:
            self.engine._dirty = True  # the kept states change in every mode: host reads sync them (the root's)
        sp = self.engine.spanning  # a strategy across nodes: launches every rank runs are announced to it
        with rtm.trace(self.trace_name, wait=wait) as scope:
            # kept: a loader pipeline refills the ring slot `sources` came from only after this read
            self.last_loader = rtm.index_launch(self.loader, (self.io_degree,), *self.loader_args, sources, rows,
                                                self.seed_scales, self.ranges, POINT)
            if sp is not None:
                sp.after_everywhere(self.loader, self.loader_args)
            if self.zeroing is not None:
                rtm.launch(self.zeroing[0], *self.zero_fill, tag=self.zeroing[1])
            else:
                self._fill(self.zero_fill, sp)
            for lay, ftask, args, fills, pre, post in self.forward:
                if pre is not None:
                    self._fill(pre[2], sp)
                    self._ilaunch(pre[0], lay, pre[1], (step, gb, self._tiles(lay), POINT))
                    if self.across_ranks:
                        for r in pre[2]:
                            rtm.launch(distributed.sum_task(self.engine, ("stats", r.uid), r.name), r,
                                       tag=lay.placement[0])
                self._fill(fills, sp)
                self._ilaunch(ftask, lay, args, (training, step, seed, gb, self._tiles(lay), POINT))
                if post is not None:
                    if sp is not None:
                        sp.before_everywhere(post[0], post[1])
                    rtm.launch(post[0], *post[1], step, gb, tag=self._here(post[2]))
                    if sp is not None:
                        sp.after_everywhere(post[0], post[1])
            for ctask, src, dst in self.state_copies:
                if sp is not None:
                    sp.before_everywhere(ctask, (src, dst))
                rtm.launch(ctask, src, dst)
                if sp is not None:
                    sp.after_everywhere(ctask, (src, dst))
            for i, (lay, btask, args) in enumerate(self.backward):
                self._ilaunch(btask, lay, args, (step, seed, gb, self._tiles(lay), POINT))
                for stask, dom, sargs, procs in self.part_sums.get(i, ()):
                    rtm.index_launch(stask, dom, *sargs, tag=procs)
                for start, region, proc in self.mpi_starts.get(i, ()):
                    rtm.launch(start, region, tag=proc)
                if i == len(self.backward) - 1:
                    for finish, region, proc in self.mpi_finish:
                        rtm.launch(finish, region, tag=proc)
                for utask, dom, uargs, procs in self.updates.get(i, ()):
                    if sp is not None:
                        sp.before_everywhere(utask, uargs)
                    fmap = rtm.index_launch(utask, dom, *uargs, iteration, lr, tag=tuple(self._here(p) for p in procs))
                    if utask.reports_penalty:
                        # only these are read: an unregularized update's penalty is 0, and waiting for
                        # it made the step's reader wake at the step's very end, where its issuing of
                        # the next step held the GIL the starting step's tasks needed (~0.7 ms a step)
                        pen.append(fmap)
                    if sp is not None:
                        sp.after_everywhere(utask, uargs)
            if self.metrics is not None:
                if sp is not None:
                    sp.before_everywhere(*self.metrics)
                fm = rtm.index_launch(self.metrics[0], (self.io_degree,), *self.metrics[1])
                if sp is not None:
                    sp.after_everywhere(*self.metrics)
        self.last_nodes = None if wait else scope.nodes
        return fm, pen

    def _fill(self, regions, sp) -> None:
        rtm = self.engine.rtm
        for r in regions:
            rtm.fill(r, 0.0)
            if sp is not None:
                sp.filled(r)

    def _tiles(self, lay) -> dict:
        """What the points of `lay` are told they compute: its tiles, or, on an MPI rank's shard of the
        batch, its tiles with every batched box moved to the shard's global rows, so the ops see the
        global sample indices one process would (dropout masks follow them). Weights and per-channel
        buffers keep their boxes; each point's arrays are its own piece either way."""
        if not self.across_ranks or self.global_batch == self.batch:
            return lay.by_color
        cache = self.__dict__.setdefault("_shifted", {})
        got = cache.get(lay.node.uid)
        if got is None:
            w = distributed.world()
            off = comm.shard(self.global_batch, w.size, w.rank)[0]
            node = lay.node
            ins, ws = [t.spec for t in node.inputs], [v.spec for v in node.weights]
            flags = {"inputs": [is_batched(t.spec) for t in node.inputs],
                     "outputs": [is_batched(t.spec) for t in node.outputs],
                     "saved": [is_batched(sp) for sp in node.op.saved_specs(ins, ws)],
                     "stats": [is_batched(sp) for sp in node.op.stats_specs(ins, ws, self.mode == "train")]}

            def move(boxes, batched):
                return tuple(((lo[0] + off, *lo[1:]), (hi[0] + off, *hi[1:])) if b and len(lo) else (lo, hi)
                             for (lo, hi), b in zip(boxes, batched, strict=False)) + tuple(boxes[len(batched):])

            got = cache[lay.node.uid] = {
                c: dataclasses.replace(t, **{k: move(getattr(t, k), f) for k, f in flags.items()})
                for c, t in lay.by_color.items()}
        return got

    def _ilaunch(self, task, lay, regions, plain) -> None:
        """An op's index launch over its placement; across nodes when the strategy spans them."""
        sp = self.engine.spanning
        if sp is None:
            self.engine.rtm.index_launch(task, lay.domain, *regions, *plain, tag=lay.placement)
        else:
            sp.launch(task, lay, regions, plain)

    def _here(self, proc):
        """Where this rank runs a launch the strategy places on `proc` (the optimizer updates and state
        updates run on every node when the strategy spans nodes)."""
        sp = self.engine.spanning
        return proc if sp is None else sp.here(proc)

    def outputs(self) -> list:
        """Host copies of the model outputs (after a predict or eval step); across MPI ranks, every rank's
        shard in rank order."""
        tg = self.engine.tgraph
        sp = self.engine.spanning
        if sp is not None:  # the output pieces other nodes computed
            for t in tg.model_outputs:
                sp.settle(self.store.act(t))
        mine = [self.engine.rtm.read(self.store.act(t)) for t in tg.model_outputs]
        if not self.across_ranks:
            return mine
        every = distributed.world().gather(mine)
        return [np.concatenate([r[i] for r in every], axis=0) for i in range(len(mine))]

