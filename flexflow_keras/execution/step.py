"""One step's launch sequence for one batch size and degree: train, evaluate or predict.

`StepProgram.run` issues the launches inside `rtm.trace(...)`, so the first step records the dependence
graph and mapping and every later step with the same batch size replays it.
"""

from __future__ import annotations

import os

import numpy as np

from flexflow_keras.execution import tasks as T
from flexflow_keras.execution.store import BatchStore, is_batched
from flexflow_keras.execution.tasks import RW, SUM, WD

_MODES = ("train", "eval", "predict")


class StepProgram:
    """The launches of one mode for a `BatchStore`."""

    def __init__(self, engine, mode: str, batch: int, degree: int, store: BatchStore):
        if mode not in _MODES:
            raise ValueError(f"StepProgram mode must be one of {_MODES}, received {mode!r}")
        self.engine, self.mode, self.batch, self.degree, self.store = engine, mode, batch, degree, store
        self.colors = (degree,)
        self.trace_name = f"{engine.name}.{mode}_step_b{batch}_d{degree}"
        tg = engine.tgraph
        self.loss_outputs = [i for i, t in enumerate(tg.per_sample_losses) if t is not None]
        self._prepare()

    # ---------------------------------------------------------------------------------------------------
    def _prepare(self) -> None:
        e, s, tg = self.engine, self.store, self.engine.tgraph
        training = self.mode == "train"
        with_labels = self.mode != "predict"
        self.x_parts = [s.act(t).part for t in tg.model_inputs]
        self.y_parts = [s.act(tg.labels[i]).part for i in self.loss_outputs] if with_labels else []
        seeds = [s.grad(tg.per_sample_losses[i]) for i in self.loss_outputs]
        self.seed_parts = [p.part for p in seeds]
        # The loader writes each loss's seed, d(loss)/d(per-sample loss) = sample_weight / elements
        # (sample_weight is ones when the user gave none), so weighted and unweighted steps are one trace.
        self.numels = tuple(int(np.prod(s.act(tg.per_sample_losses[i]).region.shape)) for i in self.loss_outputs)
        index = s.index()
        self.loader = e.cached(("loader", len(self.x_parts), len(self.y_parts), with_labels),
                               T.loader_task, len(self.x_parts), len(self.y_parts), with_labels)
        self.loader_args = [*self.x_parts, *self.y_parts, *(self.seed_parts if with_labels else []),
                            index.part]
        nodes = tg.graph.nodes if self.mode != "predict" else e.predict_nodes
        self.forward = [self._forward_entry(n, training) for n in nodes]
        self.backward = []
        self.zero_fill = []
        self.updates: dict[int, list] = {}  # backward entry index -> update launches after it
        self._last_writer: dict[int, int] = {}  # variable uid -> last backward entry writing its grad
        if training:
            self._prepare_backward()
            self._prepare_update()
        self.metrics = None
        if with_labels and self.loss_outputs:
            args = []
            for i in self.loss_outputs:
                lt = tg.per_sample_losses[i]
                args += [s.act(lt).part, s.grads[lt.uid].part, s.act(tg.labels[i]).part,
                         s.act(tg.model_outputs[i]).part]
            mlists = [e.metric_objects[i] for i in self.loss_outputs]
            self.metrics = (e.cached(("metrics", tuple(self.loss_outputs), self.numels),
                                     T.metrics_task, len(self.loss_outputs), mlists, self.numels), args)

    @staticmethod
    def sharded(node) -> bool:
        """Nodes with a batch-dim output run as index launches over the shards; the others (constants,
        reductions over the batch) as one task on whole regions."""
        return any(is_batched(t.spec) for t in node.outputs)

    def _arg(self, piece, sharded: bool):
        return piece.part if sharded else piece.region

    def _forward_entry(self, node, training: bool):
        e, s = self.engine, self.store
        sh = self.sharded(node)
        saved = s.node_saved(node)
        stats = s.node_stats(node) if training else []
        with_index = sh and getattr(node.op, "needs_sample_index", node.op.type_name == "dropout")
        ftask = e.cached(("fwd", node.uid, len(saved), len(stats), with_index),
                         T.forward_task, node, len(saved), len(stats), with_index)
        args = [self._arg(s.act(t), sh) for t in node.inputs] + [e.weights.value[w.uid] for w in node.weights]
        args += [self._arg(s.act(t), sh) for t in node.outputs] + [self._arg(p, sh) for p in saved]
        args += list(stats)
        if with_index:
            args.append(s.index().part)
        pre = None
        post = None
        if stats:
            reduce = self.degree > 1
            stask = e.cached(("stats", node.uid, len(stats), reduce),
                             T.stats_task, node, len(stats), reduce)
            sargs = [self._arg(s.act(t), sh) for t in node.inputs] + [e.weights.value[w.uid] for w in node.weights]
            pre = (stask, sargs + list(stats))
            mask = tuple(w.uid not in e.trainable_uids for w in node.weights)
            utask = e.cached(("state", node.uid, len(stats), mask),
                             T.state_update_task, node, len(stats), mask)
            post = (utask, list(stats) + [e.weights.value[w.uid] for w in node.weights])
        return sh, ftask, args, pre, post, stats

    def _prepare_backward(self) -> None:
        e, s = self.engine, self.store
        gp = e.grad_plan
        reduce = self.degree > 1
        fills: dict[int, object] = {}
        for node in gp.backward_nodes:
            sh = self.sharded(node)
            saved = s.node_saved(node)
            stats = s.node_stats(node)
            gin = []
            for t, m in zip(node.inputs, gp.input_modes[node.uid], strict=True):
                if m is None:
                    gin.append(None)
                elif sh and reduce and not is_batched(t.spec):
                    # a tensor without a batch dim read by every shard: its gradient is a reduction
                    gin.append(SUM)
                    fills[t.uid] = s.grad(t).region
                else:
                    gin.append(WD if m == "write" else RW)
            gw = [None if m is None else (SUM if reduce else (RW if m == "add" else WD))
                  for m in gp.weight_modes[node.uid]]
            base = [self._arg(s.act(t), sh) for t in node.inputs] + [e.weights.value[w.uid] for w in node.weights]
            base += [self._arg(s.act(t), sh) for t in node.outputs] + [self._arg(p, sh) for p in saved]
            base += list(stats)
            gouts = []
            for t in node.outputs:
                if t.uid not in s.grads:
                    e.rtm.fill(s.grad(t).region, 0.0)  # an output nobody differentiates: zero gradient
                gouts.append(self._arg(s.grads[t.uid], sh))
            base += gouts
            gi_args = [self._arg(s.grad(t), sh) for t, p in zip(node.inputs, gin, strict=True) if p is not None]
            gw_args = []
            for w, m in zip(node.weights, gp.weight_modes[node.uid], strict=True):
                if m == "scratch":
                    gw_args.append(e.weights.scratch_grad(w))
                    if reduce:
                        fills[-w.uid] = e.weights.scratch_grad(w)
                elif m is not None:
                    gw_args.append(e.weights.grad[w.uid])
            key = (node.uid, len(saved), len(stats), tuple(map(repr, gin)), tuple(map(repr, gw)))
            if node.op.two_stage_backward:
                t1 = e.cached(("bw_w",) + key, T.backward_task, node, len(saved), len(stats), gin, gw,
                              "weights")
                t2 = e.cached(("bw_i",) + key, T.backward_task, node, len(saved), len(stats), gin, gw,
                              "inputs")
                self.backward.append((sh, t1, base + gw_args))
                self.backward.append((sh, t2, base + gw_args + gi_args))
            else:
                t = e.cached(("bw",) + key, T.backward_task, node, len(saved), len(stats), gin, gw)
                self.backward.append((sh, t, base + gi_args + gw_args))
            for w, m in zip(node.weights, gp.weight_modes[node.uid], strict=True):
                if m in ("write", "add"):
                    self._last_writer[w.uid] = len(self.backward) - 1
        if reduce:
            self.zero_fill = [e.weights.grad[v.uid] for v in e.weights.trainable] + list(fills.values())

    def _prepare_update(self) -> None:
        """Optimizer update tasks, issued right after the backward task that completes their gradients.

        With one BLAS thread per shard (degree >= cores) there is one task per variable: the last
        layers' updates overlap the remaining backward work on the other processors, and the next
        step's forward of a layer waits only for that layer's update (measured: CNN b64 on 2 cores
        ~1.4k -> ~1.7k samples/s). When a shard's kernels already use every core (degree 1 on 2 cores),
        overlapping updates only oversubscribe them (MLP b64: 19.7k -> 15.5k samples/s in one A/B run;
        run-to-run noise on this machine is about +-20%), so one task
        updates every variable; likewise when the optimizer needs all gradients at once
        (global_clipnorm)."""
        e = self.engine
        if not e.weights.trainable or e.optimizer is None:
            return
        written = [v for v in e.weights.trainable if v.uid in self._last_writer]
        if not written:
            return
        cores = os.cpu_count() or 1
        split = cores // self.degree <= 1 and not getattr(e.optimizer, "needs_all_variables", False)
        groups = [[v] for v in written] if split else [written]
        for vs in groups:
            n_slots = tuple(len(e.weights.slots[v.uid]) for v in vs)
            regularized = any(v.regularizer is not None for v in vs)
            utask = e.cached(("update", tuple(v.uid for v in vs), n_slots, regularized),
                             T.update_task, e.optimizer, vs, n_slots, regularized)
            args = [e.weights.value[v.uid] for v in vs] + [e.weights.grad[v.uid] for v in vs]
            for v in vs:
                args += e.weights.slots[v.uid]
            after = max(self._last_writer[v.uid] for v in vs)
            self.updates.setdefault(after, []).append((utask, args))

    def run(self, sources, rows, step: int, seed: int, iteration: int = 0, lr: float = 0.0):
        """Issue one step. Returns (metrics FutureMap or None, list of penalty Futures)."""
        rtm, c, gb = self.engine.rtm, self.colors, self.batch
        training = self.mode == "train"
        fm, pen = None, []
        with rtm.trace(self.trace_name):
            rtm.index_launch(self.loader, c, *self.loader_args, sources, rows, self.numels)
            for r in self.zero_fill:
                rtm.fill(r, 0.0)
            for sharded, ftask, args, pre, post, stats in self.forward:
                if pre is not None:
                    for r in stats:
                        rtm.fill(r, 0.0)
                    rtm.index_launch(pre[0], c, *pre[1], step, gb)
                if sharded:
                    rtm.index_launch(ftask, c, *args, training, step, seed, gb)
                else:
                    rtm.launch(ftask, *args, training, step, seed, gb)
                if post is not None:
                    rtm.launch(post[0], *post[1], step, gb)
            for i, (sharded, btask, args) in enumerate(self.backward):
                if sharded:
                    rtm.index_launch(btask, c, *args, step, seed, gb)
                else:
                    rtm.launch(btask, *args, step, seed, gb)
                for utask, uargs in self.updates.get(i, ()):
                    pen.append(rtm.launch(utask, *uargs, iteration, lr))
            if self.metrics is not None:
                fm = rtm.index_launch(self.metrics[0], c, *self.metrics[1])
        return fm, pen

    def outputs(self) -> list:
        """Host copies of the model outputs (after a predict or eval step)."""
        tg = self.engine.tgraph
        return [self.engine.rtm.read(self.store.act(t).region) for t in tg.model_outputs]
