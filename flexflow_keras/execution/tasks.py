"""Runtime tasks for the training step: each op's forward, statistics, backward and state update; the
loader; the optimizer update; the per-shard loss and metric partial sums.

Every op task has a CPU variant (NumPy arrays, backend "cpu") and a GPU variant (numba device arrays,
backend "cuda"); the loader and metric tasks run on CPUs only and the runtime copies what they read.
Task bodies receive region arrays first, in the order of the privileges list, then plain values: the
step's scalars, the launch's tiles by color (ops/parallel.py) and the point's color (`POINT`), from which
each piece builds its `KernelContext`. A description is only values (op attributes, tiles, names), never
a closure over live regions.

Kernels take C-contiguous arrays. A piece that splits a non-leading dim sees strided views of the
region's home array on CPUs; the body stages those through contiguous scratch arrays (read-only ones
copied in, written ones copied back after the kernel). Measured here (2-core VM): copying back the
64x2048 column half of a 64x4096 Dense output takes 7 us, its GEMM 6.7 ms, and NumPy's matmul writing
into the strided view directly is no faster (it copies internally), so staging costs nothing that
strided kernels would save. GPU instances are shared by a sub-box only when its view is contiguous.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from flexflow_keras import regularizers
from flexflow_keras.ops.base import KernelContext
from flexflow_keras.ops.graph import OpNode
from runtime import RO, RW, WD, ProcKind, Reduce, task
from runtime.privileges import READ_ONLY, WRITE_DISCARD

SUM = Reduce("+")


def _named(fn: Callable, name: str) -> Callable:
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


def _make_task(name: str, privileges: Sequence, make_body: Callable[[str], Callable], gpu: bool = True,
               priority: int = 0):
    t = task(privileges=list(privileges), priority=priority)(_named(make_body("cpu"), name))
    if gpu:
        t.variant(ProcKind.GPU)(_named(make_body("cuda"), name + "@gpu"))
    return t


def _split(arrays, counts):
    out, i = [], 0
    for c in counts:
        out.append(list(arrays[i:i + c]))
        i += c
    return out


def stage(regions, codes: Sequence[int]):
    """(arrays, write-backs): C-contiguous stand-ins for strided host views. Read-only views are copied;
    written ones get scratch (copied in unless every use is write-discard) to copy back with `unstage`.
    A view passed at several positions (a layer taking one tensor twice, `Add()([h, h])`: its gradient is
    overwritten through one position and accumulated through the other) gets one stand-in for all of them,
    so the kernel's writes through each meet, as they do in a contiguous view."""
    seen: dict = {}  # one view's positions, by its memory and layout
    for i, a in enumerate(regions):
        if a is not None and isinstance(a, np.ndarray) and not a.flags.c_contiguous:
            seen.setdefault((a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str), []).append(i)
    if not seen:
        return regions, None
    out = list(regions)
    back = None
    for group in seen.values():
        a = regions[group[0]]
        kinds = {codes[i] for i in group}
        if kinds == {READ_ONLY}:
            tmp = np.ascontiguousarray(a)
        else:
            tmp = np.empty(a.shape, a.dtype) if kinds == {WRITE_DISCARD} else a.copy()
            if back is None:
                back = []
            back.append((a, tmp))
        for i in group:
            out[i] = tmp
    return out, back


def unstage(back) -> None:
    if back:
        for dst, tmp in back:
            dst[...] = tmp


def _codes(privs) -> tuple[int, ...]:
    return tuple(p.code for p in privs)


def _ctx(backend, tile, **kw) -> KernelContext:
    off = tile.outputs[0][0][0] if tile is not None and tile.outputs and tile.outputs[0][0] else 0
    return KernelContext(backend=backend, tile=tile, batch_offset=off, **kw)


def forward_task(node: OpNode, label: str, n_saved: int, n_stats: int, out_priv=WD):
    """Forward of one piece of `node`: RO inputs, weights and stats; `out_priv` outputs (WD, or a sum
    when the op's contraction is split into partial results) and WD saved buffers."""
    op = node.op
    counts = (len(node.inputs), len(node.weights), len(node.outputs), n_saved, n_stats)
    privs = [RO] * counts[0] + [RO] * counts[1] + [out_priv] * counts[2] + [WD] * n_saved + [RO] * n_stats
    nreg = len(privs)
    codes = _codes(privs)

    def make(backend):
        def body(*args):
            regions, (training, step, seed, global_batch, tiles, point) = args[:nreg], args[nreg:]
            arrays, back = stage(regions, codes) if backend == "cpu" else (regions, None)
            ins, ws, outs, saved, stats = _split(arrays, counts)
            ctx = _ctx(backend, tiles[point], training=training, step=step, seed=seed, global_batch=global_batch)
            op.forward(ctx, ins, ws, outs, saved, stats)
            unstage(back)
        return body

    return _make_task(f"{label}.forward", privs, make)


def stats_task(node: OpNode, label: str, n_stats: int, reduce: bool):
    """Partial batch statistics of one piece of `node` (BatchNorm), folded into the stats buffers."""
    op = node.op
    counts = (len(node.inputs), len(node.weights), n_stats)
    privs = [RO] * counts[0] + [RO] * counts[1] + [SUM if reduce else RW] * n_stats
    nreg = len(privs)
    codes = _codes(privs)

    def make(backend):
        def body(*args):
            regions, (step, global_batch, tiles, point) = args[:nreg], args[nreg:]
            arrays, back = stage(regions, codes) if backend == "cpu" else (regions, None)
            ins, ws, stats = _split(arrays, counts)
            ctx = _ctx(backend, tiles[point], training=True, step=step, global_batch=global_batch)
            op.forward_stats(ctx, ins, ws, stats)
            unstage(back)
        return body

    return _make_task(f"{label}.stats", privs, make)


def state_update_task(node: OpNode, label: str, n_stats: int, state_mask: Sequence[bool]):
    """Once per step: fold the reduced statistics into the node's state weights (moving averages)."""
    op = node.op
    privs = [RO] * n_stats + [RW if s else RO for s in state_mask]
    nreg = len(privs)

    def make(backend):
        def body(*args):
            regions, (step, global_batch) = args[:nreg], args[nreg:]
            ctx = KernelContext(backend=backend, training=True, step=step, global_batch=global_batch)
            op.update_state(ctx, list(regions[:n_stats]), list(regions[n_stats:]))
        return body

    return _make_task(f"{label}.update_state", privs, make)


def backward_task(node: OpNode, label: str, n_saved: int, n_stats: int, grad_in_privs: Sequence,
                  grad_w_privs: Sequence, stage_name: str = "both", grad_w_parts: Sequence = (),
                  moments: Sequence = (), unread: Sequence[int] = ()):
    """Backward of one piece of `node`. `grad_in_privs[i]`/`grad_w_privs[j]` is WD (overwrite), RW or SUM
    (accumulate), or None (no gradient wanted). `stage_name` is "both", "weights" or "inputs". Weight j
    with `grad_w_parts[j]` true is written into this point's part (a (1, *shape) piece; grad_parts.py).
    `moments`: (j, privilege, power, in parts) of each weight whose gradient's per-lookup moment the op also
    writes (execution/sparse_moments.py; stage "both"), its regions last; in parts as its gradient's are.
    `unread`: positions among the inputs, weights and outputs (in that order) that the op's backward does
    not read (`Op.backward_reads`): not arguments of the task, and None in the body."""
    op = node.op
    n_in, n_w, n_out = len(node.inputs), len(node.weights), len(node.outputs)
    gi_idx = [i for i, p in enumerate(grad_in_privs) if p is not None]
    gw_idx = [j for j, p in enumerate(grad_w_privs) if p is not None]
    acc_in = tuple(p is not None and p is not WD for p in grad_in_privs)
    acc_w = tuple(p is not None and p is not WD for p in grad_w_privs)
    privs = [RO] * (n_in + n_w + n_out - len(unread) + n_saved + n_stats + n_out)
    if stage_name == "inputs":
        privs += [RO] * len(gw_idx) + [grad_in_privs[i] for i in gi_idx]
    elif stage_name == "weights":
        privs += [grad_w_privs[j] for j in gw_idx]
    else:
        privs += [grad_in_privs[i] for i in gi_idx] + [grad_w_privs[j] for j in gw_idx]
    if moments and stage_name != "both":
        raise ValueError(f"{label}: a two-stage backward cannot write per-lookup moments.")
    privs += [m[1] for m in moments]
    nreg = len(privs)
    codes = _codes(privs)
    counts = (n_in, n_w, n_out, n_saved, n_stats, n_out)
    parts = [j for j, p in enumerate(grad_w_parts) if p]

    def make(backend):
        def body(*args):
            regions, (step, seed, global_batch, tiles, point) = args[:nreg], args[nreg:]
            arrays, back = stage(regions, codes) if backend == "cpu" else (regions, None)
            if unread:
                arrays = list(arrays)
                for k in unread:
                    arrays.insert(k, None)
            ins, ws, outs, saved, stats, gouts = _split(arrays, counts)
            rest = arrays[sum(counts):]
            gin: list = [None] * n_in
            gw: list = [None] * n_w
            if stage_name == "inputs":
                for k, j in enumerate(gw_idx):
                    gw[j] = rest[k]
                for k, i in enumerate(gi_idx):
                    gin[i] = rest[len(gw_idx) + k]
            elif stage_name == "weights":
                for k, j in enumerate(gw_idx):
                    gw[j] = rest[k]
            else:
                for k, i in enumerate(gi_idx):
                    gin[i] = rest[k]
                for k, j in enumerate(gw_idx):
                    gw[j] = rest[len(gi_idx) + k]
            for j in parts:
                gw[j] = gw[j][0]
            extra = {}
            if moments:
                got = arrays[len(arrays) - len(moments):]
                extra["moments"] = {j: ((a[0] if in_parts else a, power, p is not WD),)
                                    for (j, p, power, in_parts), a in zip(moments, got, strict=True)}
            ctx = _ctx(backend, tiles[point], training=True, step=step, seed=seed, global_batch=global_batch,
                       accumulate_inputs=acc_in, accumulate_weights=acc_w, extra=extra)
            if stage_name == "weights":
                op.backward_weights(ctx, ins, ws, outs, saved, stats, gouts, gw)
            elif stage_name == "inputs":
                op.backward_inputs(ctx, ins, ws, outs, saved, stats, gouts, gw, gin)
            else:
                op.backward(ctx, ins, ws, outs, saved, stats, gouts, gin, gw)
            unstage(back)
        return body

    suffix = "" if stage_name == "both" else f"_{stage_name}"
    return _make_task(f"{label}.backward{suffix}", privs, make)


def update_task(optimizer, variables, n_slots: Sequence[int], regularized: bool, moments: Sequence[bool] = ()):
    """One optimizer step over `variables`: RW values and slots, RO (RW with regularizers) gradients, then
    RO the per-lookup moments of the variables whose `moments[i]` is true (execution/sparse_moments.py).
    Returns the regularization penalty (0.0 without regularizers)."""
    n = len(variables)
    gpriv = RW if regularized else RO
    n_mom = sum(bool(m) for m in moments)
    privs = [RW] * n + [gpriv] * n + [RW] * sum(n_slots) + [RO] * n_mom
    nreg = len(privs)
    regs = [v.regularizer for v in variables]
    names = [v.path for v in variables]
    cons = [v.constraint for v in variables]
    codes = _codes(privs)

    def make(backend):
        def body(*args):
            regions, (iteration, lr) = args[:nreg], args[nreg:]
            regions, back = stage(regions, codes) if backend == "cpu" else (regions, None)
            ws, gs = list(regions[:n]), list(regions[n:2 * n])
            flat = regions[2 * n:nreg - n_mom]
            got = iter(regions[nreg - n_mom:])
            moment_list = [next(got) if m else None for m in moments] if n_mom else None
            slots, k = [], 0
            for c in n_slots:
                slots.append(list(flat[k:k + c]))
                k += c
            penalty = 0.0
            if regularized:
                for w, g, r in zip(ws, gs, regs, strict=True):
                    if r is not None:
                        host = w if backend == "cpu" else w.copy_to_host()
                        value, extra = regularizers.penalty_and_gradient(r, host)
                        penalty += value
                        if backend == "cpu":
                            g += extra
                        else:
                            g.copy_to_device(g.copy_to_host() + extra)
            optimizer.apply(backend, iteration, lr, ws, gs, slots, names=names, moments=moment_list)
            for w, c in zip(ws, cons, strict=True):
                if c is not None:
                    host = w if backend == "cpu" else w.copy_to_host()
                    new = np.asarray(c(host), dtype=host.dtype)
                    if backend == "cpu":
                        w[...] = new
                    else:
                        w.copy_to_device(new)
            unstage(back)
            return penalty
        return body

    # off the critical path: the next step reads the weights only at its forward, so each processor
    # first runs the backward work queued behind an update (MNIST CNN b64: the 1.2M-element dense
    # update ran before the first conv's backward and delayed the next step by 1.1 ms)
    t = _make_task("optimizer.update", privs, make, priority=-1)
    t.reports_penalty = regularized  # whether the step's reader must wait for its penalty (step.py)
    return t


def zero_task(n: int):
    """Zero n regions (a step's reduction targets, before their first reducers)."""

    def make(backend):
        def body(*regions):
            for r in regions:
                r[...] = 0
        return body

    return _make_task("zero", [WD] * n, make, gpu=False)


def parts_sum_task():
    """grad (a tile) = the sum of the parts' same tiles, in part order (execution/grad_parts.py)."""

    def make(backend):
        def body(parts, grad):
            if len(parts) == 1:
                grad[...] = parts[0]
                return
            np.add(parts[0], parts[1], out=grad)
            for k in range(2, len(parts)):
                grad += parts[k]
        return body

    # deferred like the updates that read it: each processor first runs the backward work queued behind
    return _make_task("gradient.sum", [RO, WD], make, gpu=False, priority=-1)


def loader_task(n_x: int, label_at: tuple[int, ...], with_seeds: bool, weight_at: tuple[int, ...] = ()):
    """Gather one batch's rows from the sources into the input, label (and seed) pieces of a shard; the
    shard's rows of the batch come from `ranges[point]`. The sources are the inputs, then one label array
    per model output, then the sample weights; `label_at` picks the labels of the outputs with a loss (an
    output without one has a label source nobody reads: Keras' `loss=[..., None]`). The losses at
    positions `weight_at` weigh their samples themselves: their sample weights go to a weight region of
    their own (after the seeds; per-sample weights broadcast over a per-timestep region) and their seeds
    are unweighted."""
    n_y = len(label_at)
    privs = [WD] * (n_x + n_y + (n_y if with_seeds else 0) + (len(weight_at) if with_seeds else 0))
    nreg = len(privs)

    def body(*args):
        regions, (sources, rows, scales, ranges, point) = args[:nreg], args[nreg:]
        lo, hi = ranges[point]
        mine = rows[lo:hi]
        for k, dst in enumerate(regions[:n_x + n_y]):
            src = sources[k] if k < n_x else sources[label_at[k - n_x]]
            np.take(src, mine, axis=0, out=dst, mode="clip")  # rows are valid: "raise" buffers `out` (3x slower)
        if with_seeds:
            weights = sources[-1]  # one array for every loss, or a tuple with one per loss
            for k, seed in enumerate(regions[n_x + n_y:n_x + 2 * n_y]):
                sw = (weights[k] if isinstance(weights, tuple) else weights)[mine]
                if k in weight_at:
                    dst = regions[n_x + 2 * n_y + weight_at.index(k)]
                    if sw.ndim > dst.ndim:
                        raise ValueError(f"Sample weights of shape {sw.shape[1:]} per sample reached a step graph "
                                         f"built for weights of shape {dst.shape[1:]}.")
                    dst[...] = sw.reshape(sw.shape + (1,) * (dst.ndim - sw.ndim))
                    seed[...] = scales[k]
                    continue
                seed[...] = (sw * scales[k]).reshape(sw.shape + (1,) * (seed.ndim - sw.ndim))
    return task(privileges=privs)(_named(body, "loader"))


def metrics_task(n_losses: int, metric_lists: Sequence[Sequence], numels: Sequence[int],
                 loss_weights: Sequence[float] | None = None, masked: Sequence[bool] | None = None,
                 n_inputs: int = 0, weight_at: tuple[int, ...] = (), recorded: tuple = (),
                 batched: tuple[bool, ...] = (), rec_index: tuple[int, ...] = (), global_batch: int = 1,
                 logit_at: tuple[int, ...] = ()):
    """Per shard: the sample-weighted loss sum of each output, then every metric's partial sums.

    Regions per output with a loss: per-sample loss, seed, label, prediction (all RO); then, for each
    output that carries a Keras mask (`masked`), its 0/1 mask shaped as the loss. A seed is
    sample_weight * loss_weight / elements; the loss weight is divided out here (the logs show each
    output's own loss). An output with loss weight 0 has a zero seed: its logged loss is then the
    unweighted mean and its weighted metrics see no sample weights. A masked output's metrics weigh
    each entry by the mask (Keras 3: every metric, weighted or not), times the sample weights for
    weighted metrics.

    A model's `compute_metrics` override is one metric object with `_ff_whole_batch` (models/
    metrics_hook.py): it gets every output's labels, predictions and sample weights (None when all are 1)
    and the `n_inputs` input regions that follow the masks.

    The losses at positions `weight_at` have unweighted seeds and a sample-weight region of their own
    (after the inputs), which the metrics read instead. Then come the regions of the tensors of the
    metric updates a compute_loss override `recorded` (metrics/symbolic_updates.py; `batched`: whether
    each is split by rows or whole; `rec_index`: the region of each of the calls' tensors in turn), which
    the last metric object of the first loss replays. Last, the logits of the outputs at `logit_at`
    (softmax or sigmoid outputs): their metrics get the prediction carrying them (metrics/logits.py)."""
    from flexflow_keras.metrics.logits import carrying  # the metric objects' own protocol

    masked = tuple(masked) if masked is not None else (False,) * n_losses
    n_rec = len(batched)
    n_log = len(logit_at)
    privs = [RO] * (4 * n_losses + sum(masked) + n_inputs + len(weight_at) + n_rec + n_log)
    rec_obj = next((m for ms in metric_lists for m in ms if getattr(m, "_ff_recorded", False)), None)
    whole = next((m for ms in metric_lists for m in ms if getattr(m, "_ff_whole_batch", False)), None)
    weights = tuple(loss_weights) if loss_weights is not None else (1.0,) * n_losses
    mask_at = {}
    for k in range(n_losses):
        if masked[k]:
            mask_at[k] = 4 * n_losses + len(mask_at)

    def body(*regions):
        n_all = len(regions) - n_log
        logits = dict(zip(logit_at, regions[n_all:], strict=True))
        weight_regions = regions[n_all - n_rec - len(weight_at):n_all - n_rec]
        out: list = []
        for k in range(n_losses):
            loss, seed = regions[4 * k], regions[4 * k + 1]
            loss64 = loss.astype(np.float64, copy=False)
            if weights[k]:
                out.append(float(np.vdot(loss64, seed.astype(np.float64, copy=False))) / weights[k])
            else:
                out.append(float(loss64.sum()) / numels[k])
        sws = []
        for k in range(n_losses):
            seed, y_true, y_pred = regions[4 * k + 1], regions[4 * k + 2], regions[4 * k + 3]
            sw = None
            if weights[k]:
                full = seed.reshape(seed.shape[0], -1).astype(np.float64) * (numels[k] / weights[k])
                # per sample, or per element where the weights vary within a sample (temporal weights)
                sw = (full[:, 0] if (full == full[:, :1]).all() else full.reshape(seed.shape)).astype(np.float32)
            if k in weight_at:
                sw = np.asarray(weight_regions[weight_at.index(k)], np.float32)
            sws.append(sw)
            if whole is not None:
                continue
            mask = regions[mask_at[k]] if k in mask_at else None
            if k in logits:
                y_pred = carrying(y_pred, logits[k])
            for m in metric_lists[k]:  # Keras 3: only weighted_metrics see the sample weights
                if m is rec_obj:
                    continue
                w = sw if getattr(m, "_ff_weighted", False) else None
                if mask is not None:
                    w = _times_mask(w, mask)
                out.append(m.shard_stats(y_true, y_pred, w))
        if whole is not None:
            ys = [regions[4 * k + 2] for k in range(n_losses)]
            preds = [carrying(regions[4 * k + 3], logits[k]) if k in logits else regions[4 * k + 3]
                     for k in range(n_losses)]  # the override's crossentropies read the logits too
            xs = regions[4 * n_losses + sum(masked):4 * n_losses + sum(masked) + n_inputs]
            # the shard's own batch loss (each output's part of the batch mean, scaled to the shard's size)
            loss = sum(weights[k] * out[k] * numels[k] / max(regions[4 * k].size, 1) for k in range(n_losses))
            out.append(whole.whole_batch_stats(list(xs), ys, preds,
                                               [None if s is None or (s == 1).all() else s for s in sws], loss))
        if rec_obj is not None:  # last: the first loss's last metric object
            share = regions[0].shape[0] / max(global_batch, 1) if regions[0].ndim else 1.0
            values = regions[n_all - n_rec:n_all]
            out.append(rec_obj.recorded_stats(recorded, [values[j] for j in rec_index],
                                              [batched[j] for j in rec_index], share))
        return out
    return task(privileges=privs)(_named(body, "metrics"))


def _times_mask(sw, mask: np.ndarray) -> np.ndarray:
    """Per-entry metric weights: the 0/1 mask times the sample weights (per sample or per entry)."""
    m = np.asarray(mask, np.float32)
    if sw is None:
        return m
    sw = np.asarray(sw, np.float32)
    return m * sw.reshape(sw.shape + (1,) * (m.ndim - sw.ndim))


def state_copy_task():
    """A stateful recurrent layer's final states (RO) copied into its kept states (WD), once per step, so
    the next batch starts from them. Runs on a CPU processor; the runtime moves the data."""

    def body(src, dst):
        dst[...] = src

    return task(privileges=[RO, WD])(_named(body, "state_copy"))
