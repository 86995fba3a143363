"""Reduction epochs: binding reducers to accumulators and folding them at the epoch's end.

Policy. The first reducer of an epoch reduces in place into its instance (the target). A later
reducer of the same operator whose region lies inside the epoch's joins it: on the first reducer's
processor and memory it also works in place; elsewhere it gets that (processor, memory)'s private
accumulator, a buffer over the epoch's region filled with the operator's identity by the first
reducer that uses it. Reducers sharing an accumulator are chained (each after the previous one), which
costs nothing since one worker runs them anyway. When another access ends the epoch, each private
accumulator gets one fold node (after its last reducer and after the last in-place reducer), and the
ending access waits on those folds. So D points on P processors cost P - 1 buffers and folds, not D - 1.

While a trace records, accumulator buffers are kept for the replays (ids `aid`), and each fold is
written down where it was created, so a replay recreates it at the same place.
"""

from __future__ import annotations

import cython

from runtime.analysis import Accumulator, Epoch, FieldState
from runtime.geometry import box_slices
from runtime.graph import FoldNode
from runtime.privileges import fold_into


class Reductions:
    """Mixed into Runtime (uses its physical manager, engine, stats and trace state)."""

    def _start_epoch(self, fs, node, mem, inst) -> None:
        """The first reducer of `fs.epoch` reduces in place; `inst` is its instance (None: home)."""
        ep = fs.epoch
        ep.target = inst
        ep.target_key = (node.proc.uid, mem.uid)
        ep.accs[ep.target_key] = Accumulator(None, node, private=False)
        self._open_epochs.add(fs)

    @cython.locals(fs=FieldState, ep=Epoch, acc=Accumulator, fast=cython.bint, creates=cython.bint)
    def _join(self, fs, sub, priv, mem, node, preds, redinit, binds):
        """Bind a reducer joining the open epoch of `fs`; returns the array it folds into."""
        ep = fs.epoch
        key = (node.proc.uid, mem.uid)
        acc = ep.accs.get(key)
        rec = self._recording
        fast = mem is self._sysmem and not fs.multi
        creates = acc is None
        if creates:
            acc = self._new_accumulator(fs, ep, mem, node, fast, persistent=rec is not None and fast)
            ep.accs[key] = acc
            redinit.append(acc.init)
        else:
            preds.append(acc.last)
            acc.last = node
        value = self._acc_view(fs, ep, acc, sub, node, fast)
        if binds is not None:
            if fast:
                binds.append(("join_fast", fs, sub, priv, mem, value, acc.init if creates else None, acc.aid))
            else:
                binds.append(("join_slow", fs, sub, priv, mem, acc.aid, creates, ep.first, ep.sub))
        return value

    def _new_accumulator(self, fs, ep, mem, node, fast: bool, persistent: bool, target=None):
        phys = self._physical
        buf, init, release = phys.reduce_buffer(fs, ep.sub, mem, ep.op)
        op = ep.op
        if fast:
            view = phys.fast_view(fs, ep.sub)

            def fold():
                fold_into(op, view, buf)
        else:
            if target is None:
                target = ep.target
            if target is None:
                if not fs.multi:
                    phys.make_multi(fs)
                target = fs.instances[0]
            fold = phys.fold_fn(op, target, ep.sub, buf, mem.device)
        if not persistent:
            inner = fold

            def fold():
                inner()
                release()
        aid = -1
        if self._recording is not None:
            aid = self._recording.new_accumulator()
        return Accumulator(buf, node, private=True, fold=fold, init=init, aid=aid, fast=fast)

    @cython.locals(fs=FieldState, ep=Epoch, acc=Accumulator)
    def _acc_view(self, fs, ep, acc, sub, node, fast: bool):
        if acc.private:
            if sub is ep.sub or sub.box == ep.sub.box:
                return acc.buf
            return acc.buf[box_slices(sub.box, ep.sub.box[0])]
        if fast and ep.target is None:
            return self._physical.fast_view(fs, sub)
        target = ep.target
        if target is None:
            target = fs.instances[0]
        target.pin(node)
        return target.view(sub.box)

    def _close_epoch(self, fs, ep) -> None:
        """End `ep`: fold every private accumulator into the target; later accesses wait on the folds."""
        self._open_epochs.discard(fs)
        tacc = ep.accs.get(ep.target_key)
        if tacc is None:
            return
        entries = []
        if tacc.last is not ep.first:
            entries.append((tacc.last, ep.sub, ep.priv))
        rec = self._recording
        for acc in ep.accs.values():
            if not acc.private:
                continue
            fold = FoldNode(acc.fold, ep.lock, acc.last)
            preds = [acc.last, tacc.last]
            if rec is not None:
                rec.add_fold(fold, preds, acc, fs, ep)
            self.engine.submit(fold, preds)
            entries.append((fold, ep.sub, ep.priv))
            self.stats.folds += 1
        fs.users.extend(entries)

    def _close_epochs(self, states) -> None:
        for fs in list(states):
            ep = fs.epoch
            if ep is not None:
                fs.epoch = None
                self._close_epoch(fs, ep)
