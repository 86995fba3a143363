"""Room for another batch size's activation store in an engine's memories.

An engine keeps one `BatchStore` (every activation, its gradient, saved and statistics buffers) per batch
size it has run: fit's batch, the epoch's last partial batch, the validation batches, an evaluate() or
predict() at another batch size. Kept, a size that comes again (every epoch) replays its recorded step
at once. Each store costs about the same bytes per sample, so a model whose one store fills much of the
memory could not hold the next one beside it: keras.io's small-data ViT trained on 256 and 204 samples,
then ran out of its 24 GB at the test evaluation's batch of 128, where tf.keras frees a step's buffers.

Policy: before an engine makes the store of a new batch size, it estimates that store's bytes from the
largest per-sample cost of the stores it holds; while that is more than its processors' memories have
free (system memory: at most what the system has available, other processes counted), it waits for the
steps in flight and drops the least recently used other store (its recorded programs and its regions; a
size that comes again records its step again, as a first step does). A step
fit has issued and not read yet pins its program and store, so fit reads them first (`crowded`).
Shape variants (models/shape_variants.py) are engines of their own and budget their own stores.
"""

from __future__ import annotations

import gc
import logging

from runtime import MemKind

log = logging.getLogger("flexflow_keras")
MB = 1 << 20


def touch(stores: dict, batch: int) -> None:
    """Mark the store of `batch` the most recently used (the dict's order is the eviction order)."""
    if batch in stores and next(reversed(stores)) != batch:
        stores[batch] = stores.pop(batch)


def free_bytes(engine) -> int:
    """Bytes free in the memories the engine's processors compute in (each counted once). System memory's
    capacity is the machine's RAM by default, shared with other processes: there the room is at most what
    the system has available."""
    machine = engine.rtm.machine
    mems = {m.name: m for m in (machine.local_memory(p) for p in engine.processors)}
    usage = engine.rtm.memory_usage()
    free = 0
    for name, (used, cap) in usage.items():
        if name in mems:
            room = cap - used
            if mems[name].kind is MemKind.SYSTEM:
                room = min(room, system_available())
            free += room
    return free


def system_available() -> int:
    """The RAM the system can still give (Linux's MemAvailable), or no limit where it cannot say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 62


def estimate(stores: dict, batch: int) -> int:
    """The bytes a store of `batch` samples would take, from the costliest per-sample store held."""
    return int(max(st.nbytes() / max(st.batch, 1) for st in stores.values()) * batch)


def crowded(engine, batch: int) -> bool:
    """Whether a step of `batch` samples would make `make_room` drop other stores (fit reads its steps in
    flight first: their programs pin their stores)."""
    stores = engine._stores
    return batch not in stores and bool(stores) and estimate(stores, batch) > free_bytes(engine)


def make_room(engine, batch: int) -> None:
    """Before `engine` makes the store of `batch`: drop its other stores, least recently used first,
    while the new store would not fit in the memory left beside them."""
    if not crowded(engine, batch):
        return
    stores = engine._stores
    need, free = estimate(stores, batch), free_bytes(engine)
    engine.rtm.fence()  # the evicted store's steps may still be running (fit issues steps without waiting)
    for old in list(stores):
        if need <= free:
            break
        size = stores[old].nbytes()
        drop(engine, old)
        free = free_bytes(engine)
        log.info("activation store of batch size %d (%.0f MB) released: the store of batch size %d needs about "
                 "%.0f MB and the memory had not enough free (%.0f MB now); batch size %d records its step "
                 "again when it comes back", old, size / MB, batch, need / MB, free / MB, old)


def drop(engine, batch: int) -> None:
    """Forget the programs of `batch` and let its store's regions go."""
    for key in [k for k in engine._programs if k[1] == batch]:
        engine.rtm.forget_trace(engine._programs.pop(key).trace_name)
    engine._stores.pop(batch, None)
    gc.collect()  # task records and region states reference each other: free the arrays now
