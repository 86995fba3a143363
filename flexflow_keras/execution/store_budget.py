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

Across engines: a script that trains one model and then another keeps the first model (keras.io's
vit_small_ds trains a vanilla ViT and then one with locality self-attention, each at batch 256), and
TensorFlow frees a step's buffers when it ends. So when an engine's own stores are gone and the new one
still would not fit, the stores of other engines go too, the engine that last made a store longest ago
first (all work on the shared runtime waited for first); their next step records again. An engine's first store, with none of
its own to measure, is estimated from its graph: every batched activation, its gradient and the saved
buffers, as if none shared a region (an upper bound: execution/buffer_reuse.py).
"""

from __future__ import annotations

import gc
import itertools
import logging
import math
import weakref

import numpy as np

from flexflow_keras.ops.graph import node_rows
from runtime import MemKind

log = logging.getLogger("flexflow_keras")
MB = 1 << 20
_engines: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # live engines -> when last used
_clock = itertools.count()


def register(engine) -> None:
    """Count `engine` among the engines whose stores may go to make room for another's (it makes a store
    now)."""
    _engines[engine] = next(_clock)


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


def estimate(engine, batch: int) -> int:
    """The bytes a store of `batch` samples would take: from the costliest per-sample store the engine
    holds, or (none held) from its graph."""
    stores = engine._stores
    if stores:
        return int(max(st.nbytes() / max(st.batch, 1) for st in stores.values()) * batch)
    return graph_bytes_per_sample(engine) * batch


def graph_bytes_per_sample(engine) -> int:
    """Bytes per sample of every batched activation, its gradient and every batched saved buffer of the
    engine's training graph, none sharing (an upper bound of a store's)."""
    total = 0
    for node in engine.tgraph.graph.nodes:  # rows per sample: k for blocks a reshape folded into the batch
        specs = [(t.spec, t.batch_scale) for t in node.outputs] * 2
        rows = node_rows(node, 1)
        specs += [(s, rows) for s in node.op.saved_specs([t.spec for t in node.inputs], [w.spec for w in node.weights])]
        for spec, scale in specs:
            if len(spec.shape) and spec.shape[0] is None and all(d is not None for d in spec.shape[1:]):
                total += scale * math.prod(int(d) for d in spec.shape[1:]) * np.dtype(spec.dtype).itemsize
    return total


def crowded(engine, batch: int) -> bool:
    """Whether a step of `batch` samples would make `make_room` drop stores (fit reads its steps in
    flight first: their programs pin their stores)."""
    return batch not in engine._stores and estimate(engine, batch) > free_bytes(engine)


def make_room(engine, batch: int) -> None:
    """Before `engine` makes the store of `batch`: drop its other stores, least recently used first,
    then other engines' (the engine that last made a store longest ago first), while the new store would
    not fit in the memory left beside them."""
    register(engine)
    if not crowded(engine, batch):
        return
    need, free = estimate(engine, batch), free_bytes(engine)
    engine.rtm.fence()  # the evicted store's steps may still be running (fit issues steps without waiting)
    others = sorted((e for e in list(_engines) if e is not engine and e.rtm is engine.rtm and e._stores),
                    key=lambda e: _engines.get(e, 0))
    for owner in [engine, *others]:
        for old in list(owner._stores):
            if need <= free:
                return
            size = owner._stores[old].nbytes()
            drop(owner, old)
            free = free_bytes(engine)
            whose = "" if owner is engine else f" of another model ({owner.name})"
            log.info("activation store of batch size %d%s (%.0f MB) released: the store of batch size %d "
                     "needs about %.0f MB and the memory had not enough free (%.0f MB now); batch size %d "
                     "records its step again when it comes back", old, whose, size / MB, batch, need / MB,
                     free / MB, old)


def drop(engine, batch: int) -> None:
    """Forget the programs of `batch` and let its store's regions go."""
    for key in [k for k in engine._programs if k[1] == batch]:
        engine.rtm.forget_trace(engine._programs.pop(key).trace_name)
    engine._stores.pop(batch, None)
    gc.collect()  # task records and region states reference each other: free the arrays now
