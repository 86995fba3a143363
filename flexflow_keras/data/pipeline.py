"""The loader pipeline: lazily read sources (image folders) decoded by loader tasks on the runtime's CPU
processors into a ring of batch buffers in zero-copy memory, which the training step consumes.

Design. `BatchRing` allocates `depth` slots (each: the batch's inputs, labels and sample weights) from
the runtime's ZERO_COPY memory, so `-ll:zsize` bounds it: a zsize that cannot hold two batches is a
ConfigError giving the size needed. The ring holds `DEPTH` batches (one read by the step, one decoding,
one ready), fewer when -ll:zsize holds fewer: a deeper ring only absorbs jitter, and its fresh memory
costs page faults in the first pass (measured at one loader: depth 2-3 about 2.1k images/s, 4 1.6k, 8
1.2k). Batch b lives in slot b % depth. `LoaderPipeline` issues, for each batch, one index launch of
the `load_batch` task over min(-ll:cpu, batch) points, each taking a contiguous share of the batch on its
own CPU processor. A refill of a slot takes the FutureMap of the step loader that last read the slot as
arguments, so the runtime orders the refill after that read without the program thread waiting. The
training loop keeps `depth - 1` batches in flight ahead of the step.

Who decodes. Where the ring is in memory that forked processes share (Linux, no GPU-mapped zero-copy),
each point hands its share to its decoder process (`data/decoders.py`) and returns, and `take` collects
the decoders' replies: decoding runs free of the GIL, beside the step's tasks. Elsewhere the point
decodes in its loader thread (Pillow and NumPy release the GIL for part of it). A dataset's `map` that
keeps the shapes runs in the decoders as well (augmentation beside the step): each batch then goes whole
to one decoder, the next batch to the next, so that the map sees the batches Keras' map sees (a ring of
-ll:cpu + 1 batches keeps every decoder busy); any other map runs on the program thread.

Under MPI each rank decodes only its shard of every batch (the positions its step reads); the rest of
the slot is left as it was.

Stall measurement. `take(b)` times how long the program waits for batch b to be decoded. The training
loop collects the step in flight before waiting (see `ready`), so the wait is time in which no step
runs: the processors wait for data. `end_epoch` reports it once per epoch when it exceeds
`STALL_FRACTION` of the epoch and `STALL_MIN_S` seconds, with the advice (more -ll:cpu loaders, a deeper
ring from -ll:zsize).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flexflow_keras.data.decoders import DecoderProcesses, processes_supported
from flexflow_keras.errors import ConfigError, DataError, FlexFlowKerasError
from runtime import POINT, MemKind, ProcKind, TaskError, comm, task
from runtime.gpu import is_process_shared
from runtime.machine import MB

CLOSE_WAIT_S = 2.0  # a closing pipeline's wait for decoder replies (a Ctrl-C may have taken one)

log = logging.getLogger("flexflow_keras")

DEPTH = 3
STALL_FRACTION = 0.10
STALL_MIN_S = 0.25  # below this much waiting in an epoch, no report (a tiny epoch's jitter is no stall)


def _mb(nbytes: float) -> str:
    mb = nbytes / MB
    return f"{mb:.1f}" if mb >= 10 else f"{mb:.2f}"


class BatchRing:
    """`depth` batch buffers in the runtime's zero-copy memory.

    Args:
        rtm: the runtime (its machine's ZERO_COPY memory holds the ring).
        batch_size: samples per slot.
        x_specs, y_specs: per input / label array, (sample shape, dtype).
        max_depth: the most slots to take even when more fit.
        shared: put the inputs in memory that processes forked later write too, where the machine can
            (`self.shared` says whether it did).

    Raises:
        ConfigError: -ll:zsize cannot hold two batches (the message gives the size to pass).
    """

    def __init__(self, rtm, batch_size: int, x_specs, y_specs, max_depth: int = DEPTH, shared: bool = False):
        self.rtm, self.batch_size = rtm, int(batch_size)
        self.x_specs = [(tuple(s), np.dtype(d)) for s, d in x_specs]
        self.y_specs = [(tuple(s), np.dtype(d)) for s, d in y_specs]
        specs = self.x_specs + self.y_specs + [((), np.dtype(np.float32))]
        self.slot_bytes = sum(self.batch_size * int(np.prod(s)) * d.itemsize for s, d in specs)
        mem = rtm.machine.memories(MemKind.ZERO_COPY)[0]
        used, capacity = rtm.memory_usage()[mem.name]
        self.zsize_mb = capacity // MB
        self.holds = max(0, (capacity - used) // self.slot_bytes)
        if self.holds < 2:
            need = (used + 2 * self.slot_bytes) / MB
            shape, dtype = self.x_specs[0]
            busy = f" ({_mb(used)} MB of it in use)" if used else ""
            raise ConfigError(
                f"-ll:zsize {self.zsize_mb} MB{busy} holds {self.holds} batch{'' if self.holds == 1 else 'es'} of "
                f"{self.batch_size} x {shape} "
                f"{dtype} = {_mb(self.slot_bytes)} MB (with labels); at least {math.ceil(need)} MB is needed "
                f"for 2 batches: pass -ll:zsize {math.ceil(need * 1.05)}, or a smaller -b/--batch-size.")
        self.depth = int(min(self.holds, max(2, max_depth)))
        self.slots: list[tuple[list[np.ndarray], list[np.ndarray], np.ndarray]] = []
        self._releases = []
        for k in range(self.depth):
            xs = [self._alloc((self.batch_size,) + s, d, f"loader ring slot {k} x[{i}]", shared)
                  for i, (s, d) in enumerate(self.x_specs)]
            ys = [self._alloc((self.batch_size,) + s, d, f"loader ring slot {k} y[{i}]", shared)
                  for i, (s, d) in enumerate(self.y_specs)]
            sw = self._alloc((self.batch_size,), np.float32, f"loader ring slot {k} sample_weight")
            sw[...] = 1.0
            self.slots.append((xs, ys, sw))
        self.last_reader: list = [None] * self.depth  # per slot: the FutureMap of the step loader reading it
        self.shared = shared and all(is_process_shared(a) for xs, ys, _ in self.slots for a in xs + ys)

    def _alloc(self, shape, dtype, label, shared=False):
        array, release = self.rtm.allocate(MemKind.ZERO_COPY, shape, dtype, label, shared=shared)
        self._releases.append(release)
        return array

    def close(self) -> None:
        """Give the ring's memory back (waits for the step loaders still reading it)."""
        for fm in self.last_reader:
            if fm is not None:
                fm.wait()
        self.slots.clear()
        for release in self._releases:
            release()
        self._releases.clear()


def _load_body(reader, x_out, y_out, y_src, sw_out, sw_src, rows, ranges, point, *after):
    """One loader point: decode its share of a batch into a ring slot (and gather labels and weights)."""
    lo, hi = ranges[point]
    t0 = time.perf_counter()
    mine = rows[lo:hi]
    reader.read_x(mine, x_out[0][lo:hi])
    _gather(mine, lo, hi, y_out, y_src, sw_out, sw_src)
    return time.perf_counter() - t0


def _gather(mine, lo, hi, y_out, y_src, sw_out, sw_src) -> None:
    """Rows `mine`'s labels (when `y_out`) and sample weights (ones without `sw_src`) into slot rows [lo, hi)."""
    for dst, src in zip(y_out, y_src, strict=True):
        np.take(src, mine, axis=0, out=dst[lo:hi])
    if sw_src is None:
        sw_out[lo:hi] = 1.0
    else:
        np.take(sw_src, mine, out=sw_out[lo:hi])


_load_body.__name__ = _load_body.__qualname__ = "load_batch"
load_batch = task(privileges=[])(_load_body)


def _submit_body(decoders, tag, first, slot, y_out, y_src, sw_out, sw_src, rows, ranges, mapped, point, *after):
    """One loader point with decoder processes: hand its share of a batch to its decoder (number `first` +
    the point), then gather the labels and weights while the decoder works (`take` collects the decode).
    With `mapped`, the decoder runs the dataset's map and writes the labels: they go with the share."""
    lo, hi = ranges[point]
    mine = rows[lo:hi]
    labels = [np.take(src, mine, axis=0) for src in y_src] if mapped else None
    decoders.submit(first + point[0], tag, slot, lo, mine, labels)
    _gather(mine, lo, hi, [] if mapped else y_out, [] if mapped else y_src, sw_out, sw_src)


_submit_body.__name__ = _submit_body.__qualname__ = "load_batch"
submit_batch = task(privileges=[])(_submit_body)


def _own_rows(n: int) -> tuple[int, int]:
    """The positions [lo, hi) of a batch of n that this process's step reads: its rank's shard under MPI
    (`runtime.comm.shard`, as the step's loader), the whole batch otherwise (or when the batch has fewer
    rows than ranks, which every rank then runs whole)."""
    w = comm.world()
    if w is None or n < w.size:
        return 0, n
    return comm.shard(n, w.size, w.rank)


@dataclass
class EpochStall:
    """One epoch's data wait: seconds waited, the epoch's seconds, and whether the report fired."""

    epoch: int
    wait_s: float
    seconds: float
    fired: bool
    decoded: int = 0  # images this process had decoded (under MPI: its ranks' shares of the batches)

    @property
    def fraction(self) -> float:
        return self.wait_s / self.seconds if self.seconds > 0 else 0.0


class LoaderPipeline:
    """Feeds training from a lazily read source through loader tasks and a zero-copy ring.

    Args:
        rtm: the runtime.
        reader: an object with ``read_x(rows, out)`` and ``sample_shape`` (an `ImageFolderSource`).
        labels: the label arrays (in memory, one per output), indexed like the reader's samples.
        batch_size: samples per batch.
        transform: optional ``fn(xs, ys) -> (xs, ys)`` applied to each decoded batch (a dataset's ``map``):
            by the decoder processes on their shares when it keeps the shapes, else on the program thread.
        cpus: the -ll:cpu value for the stall advice (default: the machine's CPU processors).
        sample_weight: per-sample float32 weights (e.g. from class_weight), or None for ones.
        processes: decode in forked decoder processes (True), in the loader threads (False), or the
            former where the platform and the ring's memory allow it (None, the default).
    """

    def __init__(self, rtm, reader, labels: Sequence[np.ndarray], batch_size: int, transform=None,
                 cpus: int | None = None, sample_weight=None, processes: bool | None = None):
        self.rtm, self.reader, self.transform = rtm, reader, transform
        self.sample_weight = None if sample_weight is None else np.ascontiguousarray(sample_weight, np.float32)
        self.labels = [np.ascontiguousarray(a) for a in labels]
        self.procs = rtm.machine.processors(ProcKind.CPU)
        self.cpus = cpus or len(self.procs)
        want = (processes_supported() if processes is None else bool(processes)) and processes_supported()
        self.batch_size = int(batch_size)
        count = max(1, min(len(self.procs), self.batch_size))  # decoders: one per loader point
        mapped = want and transform is not None and self._map_keeps_shapes()
        self.ring = BatchRing(rtm, batch_size, [(reader.sample_shape, np.float32)],
                              [(a.shape[1:], a.dtype) for a in self.labels], shared=want,
                              max_depth=max(DEPTH, count + 1) if mapped else DEPTH)
        self.decoders = None
        self.map_in_decoders = False
        if want and self.ring.shared:
            self.map_in_decoders = mapped
            self.decoders = DecoderProcesses(reader, [(xs[0], ys) for xs, ys, _ in self.ring.slots], count,
                                             transform if mapped else None)
        if transform is not None:
            log.info("loaders: the dataset's map runs %s", "in the decoder processes" if self.map_in_decoders else
                     "on the program thread" + (" (it changes the shapes of the images or labels)"
                                                if self.decoders is not None else ""))
        self._batches: list[np.ndarray] = []
        self._inflight: dict[int, tuple] = {}  # batch -> (FutureMap of its load launch, its decoders)
        self._gen = 0  # the epoch's number among this pipeline's: tags the decoders' work
        self._next = 0
        self.wait_s = 0.0
        self.decoded = 0  # images issued for decoding this epoch (this rank's shares under MPI)
        self.history: list[EpochStall] = []

    def _map_keeps_shapes(self) -> bool:
        """Whether the map gives images and labels of the slot's shapes and dtypes (probed on one sample), so
        that a decoder can run it in place on a whole batch (each batch then goes to one decoder, the next
        to the next, and the map sees the batch Keras' map sees); a map that fails here fails again on the
        program thread."""
        x0 = np.zeros((1,) + tuple(self.reader.sample_shape), np.float32)
        y0 = [a[:1].copy() for a in self.labels]
        try:
            xs, ys = self.transform([x0], y0)
        except Exception:  # noqa: BLE001 - the program-thread path raises it with the batch it failed on
            return False
        xs, ys = [np.asarray(a) for a in xs], [np.asarray(a) for a in ys]
        return (len(xs) == 1 and xs[0].shape == x0.shape and len(ys) == len(y0)
                and all(a.shape == b.shape and a.dtype == b.dtype for a, b in zip(ys, y0, strict=True)))

    @property
    def depth(self) -> int:
        return self.ring.depth

    def _issue(self, b: int) -> None:
        rows = self._batches[b]
        slot = b % self.ring.depth
        xs, ys, sw = self.ring.slots[slot]
        lo, hi = _own_rows(len(rows))
        self.decoded += hi - lo
        reader_fm = self.ring.last_reader[slot]
        after = list(reader_fm) if reader_fm is not None else []
        if self.map_in_decoders:  # the whole batch to one decoder, in turn: the map sees whole batches
            first = b % self.decoders.count
            points, ranges, tag = 1, {(0,): (lo, hi)}, (self.procs[first % len(self.procs)],)
        else:  # the batch split in shares, one per loader point (and its decoder)
            first, points = 0, max(1, min(len(self.procs), hi - lo))
            bounds = np.linspace(lo, hi, points + 1).astype(int)
            ranges = {(k,): (int(bounds[k]), int(bounds[k + 1])) for k in range(points)}
            tag = tuple(self.procs[(b + k) % len(self.procs)] for k in range(points))
        if self.decoders is not None:
            fm = self.rtm.index_launch(submit_batch, (points,), self.decoders, (self._gen, b), first, slot, ys,
                                       self.labels, sw, self.sample_weight, rows, ranges, self.map_in_decoders, POINT,
                                       *after, tag=tag)
        else:
            fm = self.rtm.index_launch(load_batch, (points,), self.reader, xs, ys, self.labels, sw,
                                       self.sample_weight, rows, ranges, POINT, *after, tag=tag)
        self._inflight[b] = (fm, range(first, first + points))

    def _fill(self) -> None:
        while self._next < len(self._batches) and self._next < self._taken + self.ring.depth:
            self._issue(self._next)
            self._next += 1

    def start_epoch(self, batches: Sequence[np.ndarray]) -> None:
        """Begin an epoch over `batches` (the sample rows of each batch, in order) and start loading."""
        if any(len(r) > self.batch_size for r in batches):
            raise ValueError(f"LoaderPipeline: a batch is larger than the ring's batch size {self.batch_size}.")
        self._batches = [np.asarray(r, np.int64) for r in batches]
        self._settle()  # loads of an epoch left early still write their slots
        self._gen += 1
        self._next = 0
        self._taken = 0
        self.wait_s = 0.0
        self.decoded = 0
        self._fill()

    def __len__(self) -> int:
        return len(self._batches)

    def _settle(self, deadline: float | None = None) -> None:
        """Wait for every load in flight to finish writing its slot, and forget it (decoder replies until
        `deadline` at most, when given: see DecoderProcesses.discard)."""
        for b, (fm, ks) in self._inflight.items():
            try:
                fm.get()
            except TaskError:
                continue  # a failed hand-over: the run ends with the error where the batch is taken
            if self.decoders is not None:
                try:
                    self.decoders.discard((self._gen, b), ks, deadline)
                except DataError:
                    continue  # a decoder that died writes nothing more; its error is raised where it is taken
        self._inflight.clear()

    def ready(self, b: int) -> bool:
        """Whether batch b is decoded (never blocks)."""
        got = self._inflight.get(b)
        if got is None or not got[0].done():
            return False
        return self.decoders is None or self.decoders.ready((self._gen, b), got[1])

    def take(self, b: int):
        """(sources, rows) of batch b for the step: the slot's arrays and ``arange(k)``; waits (timed)."""
        if b not in self._inflight:
            self._fill()
        fm, ks = self._inflight.pop(b)
        t0 = time.perf_counter()
        try:
            fm.get()
        except TaskError as e:
            if isinstance(e.__cause__, FlexFlowKerasError):
                raise e.__cause__ from None
            raise
        if self.decoders is not None:
            self.decoders.wait((self._gen, b), ks)
        self.wait_s += time.perf_counter() - t0
        self._taken = b + 1
        k = len(self._batches[b])
        xs, ys, sw = self.ring.slots[b % self.ring.depth]
        xs, ys, sw = [a[:k] for a in xs], [a[:k] for a in ys], sw[:k]
        if self.transform is not None and not self.map_in_decoders:
            xs, ys = self.transform(xs, ys)
        return tuple(xs) + tuple(ys) + (sw,), np.arange(k, dtype=np.int64)

    def consumed(self, b: int, reader_fm) -> None:
        """The step's loader launch that reads batch b's slot; loads the batches that can start now."""
        if reader_fm is not None:  # a map's output may alias the slot (labels passed through): order after it too
            self.ring.last_reader[b % self.ring.depth] = reader_fm
        self._fill()

    def end_epoch(self, epoch: int, seconds: float) -> EpochStall:
        """Record the epoch's data wait; log the stall report when it is above STALL_FRACTION of the epoch
        and at least STALL_MIN_S seconds."""
        rec = EpochStall(epoch, self.wait_s, seconds, False, self.decoded)
        if seconds > 0 and rec.fraction > STALL_FRACTION and rec.wait_s >= STALL_MIN_S:
            rec.fired = True
            ring = self.ring
            zs = (f"raise -ll:zsize (now {ring.zsize_mb} MB = {ring.holds} batches of {self.batch_size}) so more "
                  f"batches load ahead" if ring.depth < DEPTH else
                  f"-ll:zsize (now {ring.zsize_mb} MB = {ring.holds} batches of {self.batch_size}) already holds "
                  f"the deepest ring ({ring.depth} batches)")
            log.warning("data stall: epoch %d waited %.2f s of %.2f s (%.0f%%) for the loaders to decode batches. "
                        "Raise -ll:cpu (now %d; one loader worker per CPU processor); %s.", epoch + 1, rec.wait_s,
                        seconds, 100 * rec.fraction, self.cpus, zs)
        self.history.append(rec)
        return rec

    def close(self) -> None:
        """Wait for the loads still in flight (for their decoders' replies CLOSE_WAIT_S at most), end
        the decoders and give the ring's memory back."""
        try:
            self._settle(time.monotonic() + CLOSE_WAIT_S)
        finally:
            if self.decoders is not None:
                self.decoders.close()
            self.ring.close()
