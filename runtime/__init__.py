"""A Legion-shaped task runtime: regions, privileges, tasks, futures, mappers, tracing, profiling.

    import runtime as rt
    m = rt.Machine.from_args(["-ll:cpu", "2"])
    with rt.Runtime(m) as rtm:
        R = rt.Region((64, 784), np.float32, name="x")
        P = rt.Partition.equal(R, (4, 1))
        rtm.fill(R, 1.0)
        Y = rt.Region((64, 784), np.float32, name="y")
        fm = rtm.index_launch(scale, P.color_shape, P, rt.Partition.equal(Y, (4, 1)), 2.0)

Design note
-----------
Mechanism and policy are separate. The *mapper* (policy) says which processor runs each point task and
which memory holds each region argument; the runtime (mechanism) validates every answer and does the
rest: dependence analysis, instance allocation and copies, scheduling, tracing and profiling.

State. Per region field (`analysis.FieldState`, owned by one Runtime): the list of earlier accesses
that may still matter, the open reduction epoch, the home array in SYSTEM memory, and, once the field
is placed anywhere else, its instances with the boxes each holds valid. Per memory a capacity pool.
Per trace name a record. The graph of pending nodes lives in `graph.Engine` under one lock.

Flow of a launch (on the issuing thread): check the arguments against the task's privileges ->
ask the mapper per point and validate -> for each region field, find the earlier conflicting
accesses (RAW, WAR, WAW; RO/RO and same-operator reductions do not conflict) and bind the argument:
a view of the home array (fast path), an instance with planned copies, or, for a reducer joining an
open epoch, its (processor, memory)'s accumulator (the target itself on the first reducer's
processor, else a private buffer folded when the epoch ends) -> submit the node behind its
predecessors. Workers (one thread per processor; or the sequential executor) run ready nodes: copies,
then the body. A thread that waits on the threaded executor first runs ready nodes of idle CPU and
utility processors itself (one node per processor at a time, under its worker's settings), so a waited
trace of small tasks costs no hand-off between threads (runtime/workers.py). A task declared
`inline` (one that only starts work and never waits: the start of an MPI sum) runs its CPU points on
the thread that makes them ready, without a queue. A launch that raises while it is being bound (out of memory) fails its point, so
nothing ordered after it can wait forever.

Invariants.
- The contents of every region equal those of running the tasks one at a time in issue order
  (reductions fold in some order, which only float rounding can observe).
- A task runs only after every conflicting earlier access; two non-conflicting tasks may overlap.
- Reducers fold before any later reader: readers wait on the fold nodes. The first reducer's processor
  reduces in place, so a lone reducer (D=1) costs nothing extra and D points on P processors cost at
  most P - 1 buffers and folds.
- A write leaves its instance the only valid copy of its box; nothing is allocated past a memory's
  capacity (-ll:fsize/-ll:zsize/-ll:csize) and the error says which region, memory, bytes and flag.
- A replayed trace is never run against a different launch sequence; a mismatch is detected at the
  first differing launch, sealed, and analysed normally from there.
- A failed task's error reaches every waiter on it and on its dependents (which do not run); no wait
  hangs; shutdown joins every worker.

Threading policy: each CPU worker's kernels may use cores // (CPU processors) threads (BLAS via
threadpoolctl, Numba's pool, OpenMP told not to spin), so the workers never oversubscribe the cores;
`policy.refresh_free()` narrows that to the cores other processes leave free (runtime/cpuload.py).
Task bodies must not wait on futures (pass the Future as an argument); one thread issues launches.

Compiled hot paths: the modules with a `.pxd` beside them (graph, analysis, launching, reductions,
trace_record, tracing, workers) are compiled by Cython at install time from the same `.py` sources;
`runtime/_compiled.py` says when they run interpreted instead (FF_INTERPRETED=1, or a stale build).
"""

from runtime import _compiled  # noqa: F401 - first: decides which modules load compiled (see there)
from runtime.errors import (
    LaunchError,
    MachineError,
    MappingError,
    OutOfMemoryError,
    RuntimeSystemError,
    TaskError,
    TraceError,
)
from runtime.futures import Future, FutureMap
from runtime.machine import (
    Affinity,
    Channel,
    CPUOnlyWarning,
    Machine,
    MemKind,
    Memory,
    Processor,
    ProcKind,
    parse_legion_args,
)
from runtime.mapper import DefaultMapper, Mapper, TaskInfo
from runtime.privileges import RO, RW, WD, Privilege, R, Reduce
from runtime.regions import Partition, Region, Subregion
from runtime.runtime import Runtime, RuntimeStats
from runtime.tasks import POINT, Fields, Task, task

__flexflow_component__ = "runtime"

__all__ = [
    "Affinity", "CPUOnlyWarning", "Channel", "DefaultMapper", "Fields", "Future", "FutureMap", "LaunchError",
    "Machine", "MachineError", "Mapper", "MappingError", "MemKind", "Memory", "OutOfMemoryError", "POINT",
    "Partition", "Privilege", "ProcKind", "Processor", "R", "RO", "RW", "Reduce", "Region", "Runtime",
    "RuntimeStats", "RuntimeSystemError", "Subregion", "Task", "TaskError", "TaskInfo", "TraceError", "WD",
    "parse_legion_args", "task",
]
