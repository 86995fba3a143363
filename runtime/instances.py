"""Instances and data movement: where a region's data physically lives and how it gets there.

State: per memory a `MemoryPool` (capacity, bytes in use, its instances); per field of a region a home
array in SYSTEM memory (allocated on first use) and, once the field has been placed anywhere else,
a list of `Instance`s, each with the boxes where its data is valid and the node that made each box
valid. The fast path (a field only ever used in SYSTEM memory) keeps no validity at all: every task
sees a view of the home array.

Policy (all decided in issue order, on the issuing thread; the copies themselves run just before the
task body, on its worker): a reader copies the boxes its instance lacks from the instances that hold
them (same device first, then host memory, then other devices through the host); a writer makes its
instance the only valid one for its box. Allocation is charged to the memory's capacity; when it does
not fit, instances no pending task needs and whose data is valid elsewhere are evicted first, and if it
still does not fit the OutOfMemoryError names the region, the memory, the bytes and the flag.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from runtime import gpu
from runtime.errors import OutOfMemoryError, RuntimeSystemError
from runtime.geometry import (
    box_contains,
    box_intersect,
    box_is_block,
    box_overlaps,
    box_slices,
    box_subtract,
    box_volume,
    boxes_subtract,
)
from runtime.machine import MB, MemKind
from runtime.privileges import fold_into, identity
from runtime.streams import gpu_pending

READ, READ_WRITE, WRITE_ONLY = 0, 1, 2


def _raise_advice(mem, needed: int) -> str:
    """How to make room: a figure for the flag (a lower bound: what follows this allocation needs more), and
    splitting over more devices only where each device has a memory of its own (a GPU's framebuffer; every
    CPU processor shares the one system memory)."""
    at_least = int(needed / MB) + 1
    if mem.kind is MemKind.GPU_FB:
        return (f"Raise {mem.flag} (to more than {at_least}; what is allocated after this needs more), or split "
                f"the data over more GPUs.")
    drop = f", or drop {mem.flag} to use the machine's memory" if mem.kind is MemKind.SYSTEM else ""
    return (f"Raise {mem.flag} well above {at_least} (this is only the first allocation that did not fit: the "
            f"allocations after it need more){drop}.")


class MemoryPool:
    """Capacity accounting for one memory (released from workers too, hence the lock)."""

    __slots__ = ("memory", "used", "peak", "instances", "lock")

    def __init__(self, memory):
        self.memory = memory
        self.used = 0
        self.peak = 0
        self.instances: list = []  # weak references to the instances charged here, oldest first
        self.lock = threading.Lock()

    @property
    def free(self) -> int:
        return self.memory.capacity - self.used

    def charge(self, nbytes: int, label: str, what: str, evict=None) -> None:
        """Reserve `nbytes` for `what` of region `label`, evicting if `evict` can make room."""
        if nbytes > self.free and evict is not None:
            evict(self, nbytes)
        if nbytes > self.free:
            mem = self.memory
            raise OutOfMemoryError(
                f"Out of memory in {mem.name} ({mem.kind.value}, capacity {mem.capacity} bytes = "
                f"{mem.capacity / MB:.1f} MB, set by {mem.flag}): region '{label}' needs {nbytes} bytes "
                f"for {what}, but only {self.free} bytes are free. " + _raise_advice(mem, self.used + nbytes),
                region=label, memory=mem.name, requested=nbytes, free=self.free, flag=mem.flag)
        with self.lock:
            self.used += nbytes
            if self.used > self.peak:
                self.peak = self.used

    def release(self, nbytes: int) -> None:
        with self.lock:
            self.used -= nbytes


class Instance:
    """A physical copy of (part of) one field in one memory."""

    __slots__ = ("fs", "memory", "box", "array", "nbytes", "valid", "pins", "pin_limit", "device", "release", "views",
                 "__weakref__")

    def __init__(self, fs, memory, box, array, nbytes: int):
        self.fs = fs
        self.memory = memory
        self.box = box
        self.array = array
        self.nbytes = nbytes
        self.valid: list[list] = []   # [box, producer node or None], boxes disjoint
        self.pins: list = []          # nodes that will touch this instance
        self.pin_limit = 64           # the length at which finished pins are dropped
        self.device = memory.device if memory.kind is MemKind.GPU_FB else None
        self.release = None  # gives its bytes back to its memory's pool, once (on eviction or when it dies)
        # a device array's views by box, made once: slicing one costs 30-90 us of host time in numba-cuda
        # (a context check and a dummy-array walk), against ~1 us for NumPy, whose views are not kept
        self.views = {} if self.device is not None else None

    def index(self, box) -> tuple:
        return box_slices(box, self.box[0])

    def pin(self, node) -> None:
        """Record that `node` will touch this instance (eviction skips an instance with a pending pin).
        Finished nodes are dropped as the list grows: without that, every step of a long fit added its
        nodes to the instances of the weights for good."""
        pins = self.pins
        pins.append(node)
        if len(pins) > self.pin_limit:  # amortised: many pending pins are not rescanned at every call
            self.pins = pins = [n for n in pins if not n.done]
            self.pin_limit = max(64, 2 * len(pins))

    def view(self, box):
        views = self.views
        if views is not None:
            v = views.get(box)
            if v is None:
                v = views[box] = self._slice(box)
            return v
        return self._slice(box)

    def _slice(self, box):
        index = self.index(box)
        # a 0-d region: `array[()]` would be a NumPy scalar (a copy); `array[...]` is a writable view
        return self.array[index] if index else self.array[...]

    def __repr__(self):
        return f"Instance({self.fs.label} in {self.memory.name}, box={self.box})"


def _cut(valid: list, box) -> list:
    out = []
    for piece in valid:
        if box_overlaps(piece[0], box):
            out.extend([b, piece[1]] for b in box_subtract(piece[0], box))
        else:
            out.append(piece)
    return out


class Physical:
    """Home arrays, instances, copies and reduction buffers for one Runtime."""

    def __init__(self, machine, stats):
        self.machine = machine
        self.stats = stats
        self.pools = {m.uid: MemoryPool(m) for m in machine.memories()}
        self.sysmem = machine.memories(MemKind.SYSTEM)[0]
        self.has_gpus = bool(machine.gpu_devices)
        self.multi_gen = 0  # how many fields have left the fast path (trace records compare it)
        self._identities: dict = {}
        self._spare: dict = {}  # (memory uid, shape, dtype) -> host reduction buffers kept for reuse
        self._spare_lock = threading.Lock()

    # -- the home array (fast path) ------------------------------------------------------------
    def home(self, fs) -> np.ndarray:
        if fs.home is None:
            nbytes = fs.region.size * fs.dtype.itemsize
            pool = self.pools[self.sysmem.uid]
            pool.charge(nbytes, fs.label, "its home instance", self._evict)
            fs.home = np.zeros(fs.region.shape, dtype=fs.dtype)
            weakref.finalize(fs.region, pool.release, nbytes)
        return fs.home

    def fast_view(self, fs, sub):
        v = fs.views.get(sub)
        if v is None:
            home = fs.home if fs.home is not None else self.home(fs)
            v = home[sub._slices] if sub._slices else home[...]  # 0-d: a view, not a NumPy scalar
            fs.views[sub] = v
        return v

    def make_multi(self, fs) -> None:
        home = self.home(fs)
        inst = Instance(fs, self.sysmem, fs.region.box, home, 0)
        inst.valid = [[fs.region.box, None]]
        fs.instances = [inst]
        fs.multi = True
        self.multi_gen += 1

    # -- instances ----------------------------------------------------------------------------
    def _instance_for(self, fs, sub, mem) -> Instance:
        box = sub.box
        if mem.uid == self.sysmem.uid:
            if not (fs.region.exact_pieces and not sub._contiguous):
                return fs.instances[0]
            for inst in fs.instances:  # an exact instance of this piece (see Region(exact_pieces=True))
                if inst.memory.uid == mem.uid and inst.box == box:
                    return inst
        else:
            on_gpu = mem.kind is MemKind.GPU_FB
            for inst in fs.instances:
                if inst.memory.uid == mem.uid and box_contains(inst.box, box) and (
                        not on_gpu or box_is_block(inst.box, box)):
                    return inst
        nbytes = box_volume(box) * fs.dtype.itemsize
        pool = self.pools[mem.uid]
        pool.charge(nbytes, fs.label, f"an instance of {sub.name} {sub.shape}", self._evict)
        shape = tuple(h - lo for lo, h in zip(*box, strict=True))
        if mem.kind is MemKind.GPU_FB:
            array = gpu.device_array(mem.device, shape, fs.dtype)
        elif mem.kind is MemKind.SYSTEM:
            array = np.empty(shape, dtype=fs.dtype)
        else:
            array = gpu.zero_copy_array(shape, fs.dtype, self.has_gpus)
        inst = Instance(fs, mem, box, array, nbytes)
        inst.release = weakref.finalize(inst, pool.release, nbytes)
        fs.instances.append(inst)
        pool.instances.append(weakref.ref(inst))  # the field owns it: it dies with its region
        if len(pool.instances) % 1024 == 0:  # forget the references of regions that are gone
            pool.instances[:] = [r for r in pool.instances if r() is not None]
        self.stats.instances += 1
        return inst

    def _evict(self, pool: MemoryPool, nbytes: int) -> None:
        self.drop_spares(pool, nbytes)
        for ref in list(pool.instances):
            if nbytes <= pool.free:
                return
            inst = ref()
            if inst is None:  # its region is gone (and its bytes with it)
                pool.instances.remove(ref)
                continue
            if any(not n.done for n in inst.pins):
                continue
            inst.pins = []
            pieces = [p[0] for p in inst.valid]
            for other in inst.fs.instances:
                if other is not inst:
                    for p in other.valid:
                        pieces = boxes_subtract(pieces, p[0])
            if pieces:
                continue
            inst.fs.instances.remove(inst)
            pool.instances.remove(ref)
            inst.release()

    def acquire(self, fs, sub, mem, node, mode: int, preds: list, copies: list) -> Instance:
        """Make `sub` of `fs` usable in `mem` by `node`: plan copies, update validity, pin."""
        if not fs.multi:
            self.make_multi(fs)
        inst = self._instance_for(fs, sub, mem)
        box = sub.box
        inst.pin(node)
        if sub._empty:
            return inst
        valid = inst.valid
        whole = len(valid) == 1 and valid[0][0] == box  # the steady state of a step: one valid piece, this box
        if mode != WRITE_ONLY:
            if whole:
                p = valid[0][1]
                if p is not None and (not p.done or (p.gpu_event is not None and gpu_pending(p))):
                    preds.append(p)
            else:
                missing = [box]
                for piece in valid:
                    if box_overlaps(piece[0], box):
                        p = piece[1]
                        if p is not None and (not p.done or (p.gpu_event is not None and gpu_pending(p))):
                            preds.append(p)
                        missing = boxes_subtract(missing, piece[0])
                if missing:
                    self._copy_in(fs, inst, missing, node, mode, preds, copies)
        if mode != READ:
            for other in fs.instances:
                if other is not inst and other.valid:
                    other.valid = _cut(other.valid, box)
            if whole:
                inst.valid = [[box, node]]
            else:
                inst.valid = _cut(inst.valid, box)
                inst.valid.append([box, node])
        return inst

    def _sources(self, fs, inst):
        same = [i for i in fs.instances if i is not inst and i.device == inst.device and i.device is not None]
        host = [i for i in fs.instances if i is not inst and i.device is None]
        other = [i for i in fs.instances if i is not inst and i not in same and i not in host]
        return same + host + other

    def _copy_in(self, fs, inst, missing, node, mode, preds, copies) -> None:
        for src in self._sources(fs, inst):
            for piece in src.valid:
                rest = []
                for m in missing:
                    inter = box_intersect(m, piece[0])
                    if inter is None:
                        rest.append(m)
                        continue
                    copies.append(self._copy_fn(src, inst, inter))
                    self.stats.copies += 1
                    self.stats.copy_bytes += box_volume(inter) * fs.dtype.itemsize
                    p = piece[1]
                    if p is not None and (not p.done or (p.gpu_event is not None and gpu_pending(p))):
                        preds.append(p)
                    src.pin(node)
                    if mode == READ:
                        inst.valid.append([inter, node])
                    rest.extend(box_subtract(m, inter))
                missing = rest
                if not missing:
                    return
        raise RuntimeSystemError(f"internal: no valid copy of {fs.label} for boxes {missing}")

    @staticmethod
    def _copy_fn(src: Instance, dst: Instance, box):
        s_idx, d_idx = src.index(box), dst.index(box)
        sa, da = src.array, dst.array
        sd, dd = src.device, dst.device
        if sd is None and dd is None:
            return lambda: np.copyto(da[d_idx], sa[s_idx])
        if sd is None:
            def h2d():
                with gpu.on_device(dd):
                    gpu.h2d_view(dst.view(box), sa[s_idx], gpu.copy_stream(dd))
            return h2d
        if dd is None:
            def d2h():
                with gpu.on_device(sd):
                    gpu.copy_device_to_host(da[d_idx], sa, s_idx)
            return d2h
        if sd == dd:
            def d2d():
                with gpu.on_device(sd):
                    gpu.copy_device_to_device(da, d_idx, sa, s_idx, gpu.copy_stream(dd))
            return d2d

        def via_host():
            tmp = np.empty(tuple(h - lo for lo, h in zip(*box, strict=True)), dtype=src.fs.dtype)
            with gpu.on_device(sd):
                gpu.copy_device_to_host(tmp, sa, s_idx)
            with gpu.on_device(dd):
                gpu.copy_host_to_device(da, d_idx, tmp)
        return via_host

    # -- reductions ---------------------------------------------------------------------------
    def reduce_buffer(self, fs, sub, mem, op: str, keep: bool = False):
        """(buffer, init, release) for a private reducer of `sub` placed in `mem`.

        With `keep` (a replayed trace, which asks for the same buffers every step: allocating and
        first-touching tens of MB per step cost more than the folds), a host buffer is kept for reuse
        when released; it stays charged to the memory while kept, and an allocation that does not fit
        drops kept buffers first."""
        nbytes = sub._volume * fs.dtype.itemsize
        pool = self.pools[mem.uid]
        key = (op, fs.dtype)
        if mem.kind is not MemKind.GPU_FB:
            with self._spare_lock:
                spare = self._spare.get((mem.uid, sub.shape, fs.dtype))
                buf = spare.pop() if spare else None
            if buf is not None:
                ident = self._identities.get(key)
                if ident is None:
                    ident = self._identities[key] = identity(op, fs.dtype)

                def init_again():
                    buf.fill(ident)
                return buf, init_again, (self._keeper(mem, buf) if keep else self._freer(pool, buf))
        pool.charge(nbytes, fs.label, f"a Reduce({op!r}) buffer of {sub.name} {sub.shape}", self._evict)
        ident = self._identities.get(key)
        if ident is None:
            ident = self._identities[key] = identity(op, fs.dtype)
        if mem.kind is MemKind.GPU_FB:
            dev = mem.device
            buf = gpu.device_array(dev, sub.shape, fs.dtype)
            host_ident = np.full(sub.shape, ident, dtype=fs.dtype)

            def init():
                with gpu.on_device(dev):
                    gpu.copy_host_to_device(buf, tuple(slice(0, s) for s in sub.shape), host_ident)
        else:
            buf = np.empty(sub.shape, dtype=fs.dtype)

            def init():
                buf.fill(ident)
            return buf, init, (self._keeper(mem, buf) if keep else self._freer(pool, buf))
        return buf, init, (lambda: pool.release(nbytes))

    @staticmethod
    def _freer(pool: MemoryPool, buf):
        return lambda: pool.release(buf.nbytes)

    def _keeper(self, mem, buf):
        """A release that keeps host buffer `buf` for the next reducer of the same shape."""
        def keep():
            with self._spare_lock:
                self._spare.setdefault((mem.uid, buf.shape, buf.dtype), []).append(buf)
        return keep

    def drop_spares(self, pool: MemoryPool | None = None, nbytes: int | None = None) -> None:
        """Release kept reduction buffers: those of `pool` until `nbytes` more fit in it (eviction), or,
        with no arguments, all of them (a trace that kept them is gone)."""
        with self._spare_lock:
            for key in list(self._spare):
                owner = self.pools[key[0]]
                if pool is not None and owner is not pool:
                    continue
                bufs = self._spare[key]
                while bufs and (nbytes is None or nbytes > owner.free):
                    owner.release(bufs.pop().nbytes)
                if not bufs:
                    del self._spare[key]

    @staticmethod
    def fold_fn(op: str, target: Instance, sub, buf, buf_device):
        """A callable folding `buf` (on `buf_device`, None for host) into `target` at `sub`'s box."""
        t_idx = target.index(sub.box)
        tarr, tdev = target.array, target.device
        shape = sub.shape
        dtype = target.fs.dtype
        full = tuple(slice(0, s) for s in shape)

        def host_buf():
            if buf_device is None:
                return buf
            tmp = np.empty(shape, dtype=dtype)
            with gpu.on_device(buf_device):
                gpu.copy_device_to_host(tmp, buf, full)
            return tmp

        if tdev is None:
            return lambda: fold_into(op, tarr[t_idx], host_buf())

        def device_target():
            with gpu.on_device(tdev):
                if buf_device == tdev and gpu.fold_on_device(op, tarr[t_idx], buf):
                    return
                cur = np.empty(shape, dtype=dtype)
                gpu.copy_device_to_host(cur, tarr, t_idx)
                fold_into(op, cur, host_buf())
                gpu.copy_host_to_device(tarr, t_idx, cur)
        return device_target
