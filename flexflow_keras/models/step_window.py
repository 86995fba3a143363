"""Deferred reading of training steps in `fit`: which batches' logs someone reads, and the window of steps
issued but not yet read.

`fit` issues every training step without waiting for it (execution/overlap.py) and reads a step's
loss and metric partial sums only when a value is needed:

- where a callback reads the batch's logs: every batch when some callback acts at batch granularity
  (it overrides a batch hook and does not say when it needs the logs; Keras 3's CallbackList makes
  the same distinction for its asynchronous dispatch), else the batches a callback's
  ``needs_batch_logs(batch)`` asks for (the progress bar when it will redraw, the ``-p`` lines every
  print-frequency iterations);
- at the end of an epoch (the epoch's logs, validation, epoch callbacks), and before waiting for data
  that is late (so that the wait measures the stall);
- when more than `IN_FLIGHT` steps are unread: the oldest is read, so the host runs at most that many
  steps ahead of the processors and the futures held stay bounded.

Steps are read in issue order into the epoch's `RunningMeans`, the same additions in the same order
as reading each step at once, so the epoch logs and the history are bit-identical with and without
the overlap. (The partial sums are read from each step's futures on the host, in batches at the
points above; they are not summed on the processors.) A batch whose logs nobody reads still gets
its ``on_train_batch_end`` call, at once, with the logs of the last read (the progress display counts
steps and samples from those calls; it shows values only where it asked for them).

A callback may declare ``needs_batch_logs(batch) -> bool`` next to its batch hooks (called just before
``on_train_batch_end(batch, ...)``); its batch hooks then run every batch, with up-to-date logs only
where it returned True. A subclass that overrides a batch hook without declaring it again is read
every batch.
"""

from __future__ import annotations

from collections import deque

from flexflow_keras.callbacks.callback import Callback
from flexflow_keras.execution import overlap as _overlap

IN_FLIGHT = 2  # training steps issued but unread, at most, before the oldest is read

_BATCH_HOOKS = ("on_batch_begin", "on_batch_end", "on_train_batch_begin", "on_train_batch_end")


def _definer(cls, name: str):
    """The class of `cls`'s MRO whose body defines `name` (None when none does)."""
    return next((k for k in cls.__mro__ if name in vars(k)), None)


def _declares_demand(cb) -> bool:
    """Whether `cb`'s batch hooks are covered by its `needs_batch_logs` (declared by the same class as
    every batch hook it overrides, or by a subclass of it)."""
    cls = type(cb)
    declared = _definer(cls, "needs_batch_logs")
    if declared is None or declared is Callback:
        return False
    for hook in _BATCH_HOOKS:
        owner = _definer(cls, hook)
        if owner is not Callback and owner is not None and not issubclass(declared, owner):
            return False
    return True


def acts_per_batch(cb) -> bool:
    """True when `cb` overrides a batch hook without declaring when it needs the batch's logs (a hook set
    on the instance, as `LambdaCallback(on_train_batch_end=...)` does, counts)."""
    if any(h in vars(cb) for h in _BATCH_HOOKS):
        return True
    overrides = any(getattr(type(cb), h) is not getattr(Callback, h) for h in _BATCH_HOOKS)
    return overrides and not _declares_demand(cb)


def passive(cbs) -> bool:
    """True when no callback acts at batch granularity (see `acts_per_batch`), so steps may be issued
    ahead of their logs and read only where `LogDemand` says."""
    return not any(acts_per_batch(cb) for cb in cbs)


class LogDemand:
    """Which batches' logs the callbacks read: `due(batch)`.

    Args:
        cbs: the CallbackList.
        every_batch: read every batch (a callback acts per batch, or the overlap is off).
    """

    def __init__(self, cbs, every_batch: bool):
        self.every_batch = every_batch
        self._askers = [] if every_batch else [cb.needs_batch_logs for cb in cbs if _declares_demand(cb)]

    def due(self, batch: int) -> bool:
        if self.every_batch:
            return True
        return any(ask(batch) for ask in self._askers)


class StepWindow:
    """Training steps issued but not yet read, read in issue order into the epoch's running means.

    Args:
        engine: the Engine (`collect_train`).
        running: the epoch's `RunningMeans`.
        loss_weights: the compiled loss weights (for the running total).
        in_flight: steps left unread by `trim`.
    """

    def __init__(self, engine, running, loss_weights, in_flight: int = IN_FLIGHT):
        self.engine, self.running, self.loss_weights = engine, running, list(loss_weights)
        self.in_flight = max(0, int(in_flight))
        self._pending: deque = deque()
        self._last_nodes = None  # task nodes of the step read last (None when issued waiting)
        self.read = 0  # steps read since `start_epoch`

    def __len__(self) -> int:
        return len(self._pending)

    def start_epoch(self) -> None:
        self.read = 0

    def push(self, size: int, handle) -> None:
        """A step of `size` samples was issued (`handle`: what `Engine.issue_train` returned)."""
        self._pending.append((size, handle))

    def trim(self) -> None:
        """Read the oldest steps until at most `in_flight` are unread."""
        while len(self._pending) > self.in_flight:
            self._read_oldest()

    def drain(self) -> None:
        """Read every step issued so far (waits for them; a failed step raises its task's error, a bad
        label a GPU kernel recorded raises once its copy has reached the host)."""
        while self._pending:
            self._read_oldest()
        _overlap.raise_device_failures(wait=False)

    def end_epoch(self) -> None:
        """`drain`, then wait for the whole last step: its optimizer updates are not read (their penalty
        is 0 without regularizers), so a failed update of the epoch's last step raises here rather than
        at whatever next reads the weights."""
        self.drain()
        nodes, self._last_nodes = self._last_nodes, None
        if nodes:
            _overlap.raise_first_failure(self.engine.rtm, nodes)
        _overlap.raise_device_failures(wait=True)

    def _read_oldest(self) -> None:
        size, handle = self._pending.popleft()
        self._last_nodes = handle[3]
        losses, stats, penalty = self.engine.collect_train(handle)
        self.running.add(size, losses, self.loss_weights, penalty, stats)
        self.read += 1
