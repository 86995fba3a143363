"""Training across MPI ranks (nodes): what the engine does differently when `runtime.comm` found a world.

SPMD data parallelism between nodes (see runtime/comm.py for the MPI side):
- every rank runs the same script; at import the ranks check that they were given the same flags (and
  ranks sharing a host with enough GPUs get devices of their own for their -ll:gpu), seed
  NumPy's and Python's global generators and the framework's own (utils/rng.py: fit's shuffle seeds,
  the layers' seeds) from rank 0 (so scripts that draw data or shuffle without a seed draw the same on
  every rank, and every rank's fit takes its shard of one order of the samples), and every rank but 0 sends its standard output to /dev/null and
  logs only warnings, so only rank 0 prints progress;
- a training step's global batch (`-b`) is split into one contiguous shard per rank
  (`runtime.comm.shard`); each rank's loader reads only its shard's rows (an image folder's loader
  pipeline decodes only those: data/pipeline.py), and the node's own strategy
  splits the shard over its processors, so the batch is split over every processor of every node;
- the loss seeds are scaled by the global batch, so the per-rank gradients and loss partial sums add up
  to the single-process ones; every trainable weight's gradient is summed over the ranks by a
  nonblocking Iallreduce started by a task right after the last backward task writing it, and waited by
  a task just before the optimizer updates (issued after the whole backward pass, so the reductions
  overlap the rest of it); batch statistics (BatchNorm) are summed over the ranks before they are read;
- the host gathers each rank's loss and metric partial sums and adds them in rank order, which is the
  order one process adds its shards in;
- the initial weights are broadcast from rank 0, and the ranks agree on rank 0's strategy (the search
  runs without MPI reductions in its measured steps, so no rank waits on another's timing);
- only rank 0 writes saved models and checkpoints; every rank waits until they are written.

A strategy whose devices reach past one node's processors is not sharded: it runs across the nodes as
given (execution/spanning.py). Evaluation and prediction shard their batches the same way: evaluate gathers the partial sums, predict
the outputs, in rank order. A batch with fewer rows than ranks runs whole on every rank (the same
numbers, computed redundantly; no reduction needed).
"""

from __future__ import annotations

import logging
import os
import random
import sys

import numpy as np

from flexflow_keras.utils import rng as _rng
from runtime import comm as _comm

log = logging.getLogger("flexflow_keras")


def start() -> None:
    """Join the MPI job when launched by mpiexec with several ranks (called at import)."""
    w = _comm.start(sys.argv[1:])
    if w is None:
        return
    from runtime import parse_legion_args

    gpus = parse_legion_args(sys.argv[1:])[0].get("gpus", 0)
    visible = _comm.assign_gpus(gpus)  # ranks sharing a host get GPUs of their own when it has enough
    if visible is not None:
        log.info("rank %d uses CUDA devices %s of this host", w.rank, visible)
    seed = w.bcast(int(np.random.SeedSequence().entropy % (2**32)) if w.rank == 0 else None)
    np.random.seed(seed)
    random.seed(seed)
    _rng.set_framework_seed(seed, by_script=False)  # fit's shuffles and the layers' seeds: equal on every rank
    if w.rank != 0:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
        log.setLevel(logging.WARNING)
    else:
        log.info("%s", w.describe())


def world():
    """The MPI world, or None in a single process."""
    return _comm.world()


def shard_rows(rows: np.ndarray) -> np.ndarray | None:
    """This rank's rows of a global batch, or None when the batch runs whole on every rank (one process,
    or fewer rows than ranks)."""
    w = _comm.world()
    if w is None or len(rows) < w.size:
        return None
    lo, hi = _comm.shard(len(rows), w.size, w.rank)
    return rows[lo:hi]


def agree_weights(variables) -> None:
    """Overwrite every variable's host value with rank 0's."""
    w = _comm.world()
    if w is None:
        return
    for v in variables:
        val = v._value
        if isinstance(val, np.ndarray) and val.size and val.flags.c_contiguous and val.dtype.kind in "fiub":
            w.bcast_array(val)
        else:
            v._value = w.bcast(val)


def agree_strategy(engine) -> None:
    """Set rank 0's strategy on every rank (the search measures each rank's own timings)."""
    from flexflow_keras.ops.strategy import ParallelConfig, Strategy

    w = _comm.world()
    s = engine.strategy
    if w is None or s is None:
        return
    mine = tuple((k, tuple(c.degrees), tuple(c.devices), c.reduce) for k, c in s.configs)
    theirs = w.bcast(mine)
    if theirs != mine:
        log.info("rank %d: using rank 0's strategy (this rank's search chose another)", w.rank)
        engine.set_strategy(Strategy({k: ParallelConfig(d, dev, r) for k, d, dev, r in theirs},
                                     s.source + " (rank 0's)"))


def gather_parts(parts: list) -> list:
    """Every rank's partial sums (from the metrics launch), in rank order."""
    w = _comm.world()
    if w is None:
        return parts
    out: list = []
    for p in w.gather(list(parts)):
        out.extend(p)
    return out


def reducer(engine, key, name: str):
    """The engine's Reducer for `key` (created on first use; every rank creates them in the same order)."""
    cache = engine.__dict__.setdefault("_reducers", {})
    r = cache.get(key)
    if r is None:
        r = cache[key] = _comm.Reducer(_comm.world(), name)
    return r


def release(engine) -> None:
    """Free the communicators of `engine`'s reducers (collective: every rank detaches the same engines
    in the same order)."""
    for r in engine.__dict__.pop("_reducers", {}).values():
        r.comm.Free()


def on_rank0(fn, *args, **kwargs):
    """Call `fn` on rank 0 only (writes: saved models, checkpoints), then let every rank go on once it
    has returned. In a single process: just `fn(...)`."""
    w = _comm.world()
    if w is None:
        return fn(*args, **kwargs)
    out = fn(*args, **kwargs) if w.rank == 0 else None
    w.barrier()
    return out


def reduce_tasks(engine, key, name: str):
    """(start, finish) tasks of the sum over ranks of one region (read-write, placed by the caller)."""
    return engine.cached(("mpi_sum_tasks", key), lambda: _comm.sum_tasks(reducer(engine, key, name)))


def sum_task(engine, key, name: str):
    """One blocking sum over ranks of a small region (batch statistics)."""
    from runtime import RW, ProcKind, Task

    red = reducer(engine, key, name)

    def body(buf):
        red.allreduce(buf)

    return engine.cached(("mpi_sum", key), lambda: Task(body, [RW], name=f"{name}.allreduce",
                                                         kinds=(ProcKind.CPU, ProcKind.GPU)))
