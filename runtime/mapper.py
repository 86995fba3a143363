"""Mappers: the policy that says where each point task runs and where each region argument lives.

The runtime asks, the mapper answers, the runtime checks (`validate_*`): a processor outside the
machine, a processor kind the task has no variant for, or a memory the processor cannot address is a
MappingError naming the mapper, the decision and the task. `DefaultMapper` prefers GPUs for tasks with
a GPU variant, spreads index-launch points cyclically over processors of that kind (point k on
processor k mod n, so a point stays put from step to step), sends a single launch that updates a region
(RW or Reduce) to the processor that last wrote it (owner computes: a chain of updates stays on one
worker and its data stays in one memory) and round-robins the other single launches, accepts a
Processor passed as a launch's `tag` (every point there) or a tuple of Processors (one per point of an
index launch, in the order of its points: an explicit placement, as a strategy gives), and places every
argument in the processor's local memory (SYSTEM for CPU/UTIL, the GPU's framebuffer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runtime.errors import MappingError
from runtime.machine import Machine, Memory, Processor, ProcKind
from runtime.privileges import READ_WRITE, REDUCE, Privilege


@dataclass(frozen=True, eq=False)
class TaskInfo:
    """What a mapper knows about a launch.

    Attributes:
        task: the Task; name: its name; tag: the launch's `tag`; index_launch: True for index launches;
        domain: the launch domain (None for single launches); variants: kinds the task has bodies for;
        privileges: one per region argument; machine: the machine being mapped onto.
    """

    task: object
    name: str
    tag: object
    index_launch: bool
    domain: tuple | None
    variants: frozenset
    privileges: tuple
    machine: Machine


class Mapper:
    """Base mapper. Subclasses answer `select_processor` and `select_memory`.

    `map_point` asks both questions for one point; override it only to answer them faster together.
    """

    def select_processor(self, task_info: TaskInfo, point: tuple, machine: Machine) -> Processor:
        """The processor that runs `point` of the launch."""
        raise NotImplementedError(f"{type(self).__name__} must implement select_processor")

    def select_memory(self, task_info: TaskInfo, point: tuple, processor: Processor, arg_index: int,
                      region, privilege: Privilege) -> Memory:
        """The memory holding region argument `arg_index` while `point` runs on `processor`."""
        raise NotImplementedError(f"{type(self).__name__} must implement select_memory")

    def map_point(self, task_info: TaskInfo, point: tuple, k: int, regions: Sequence) -> tuple[Processor, list]:
        """(processor, one memory per region argument) for point number `k` of the launch."""
        proc = self.select_processor(task_info, point, task_info.machine)
        validate_processor(self, task_info, point, proc)
        privs = task_info.privileges
        mems = [self.select_memory(task_info, point, proc, i, r, privs[i]) for i, r in enumerate(regions)]
        return proc, mems


class DefaultMapper(Mapper):
    """GPU when the task has a GPU variant and the machine has GPUs, else CPU, else UTIL; local memory."""

    def __init__(self):
        self._rr: dict[int, int] = {}  # id(processor list) -> next index
        self._machine = None
        self._runtime = None
        self._fast = False
        self._procs_cache: dict = {}

    def bind(self, machine: Machine, runtime=None) -> None:
        """Called by the Runtime that installs this mapper (the runtime answers `last_writer`)."""
        self._machine = machine
        self._runtime = runtime
        self._procs_cache = {}
        self._rr = {}
        self._by_kind = {k: machine.processors(k) for k in ProcKind}
        self._local = {p.uid: machine.local_memory(p) for p in machine.processors()}
        cls = type(self)
        self._fast = (cls.select_processor is DefaultMapper.select_processor
                      and cls.select_memory is DefaultMapper.select_memory)

    def _procs(self, task_info: TaskInfo) -> list:
        procs = self._procs_cache.get(task_info)
        if procs is None:
            procs = self._procs_cache[task_info] = self._by_kind[self._kind(task_info)]
        return procs

    def _kind(self, task_info: TaskInfo) -> ProcKind:
        variants = task_info.variants
        for kind in (ProcKind.GPU, ProcKind.CPU, ProcKind.UTIL):
            if kind in variants and self._by_kind[kind]:
                return kind
        have = ", ".join(k.value for k in variants)
        raise MappingError(f"Mapper {_who(self)} cannot place task '{task_info.name}': it has variants "
                           f"for {have} but the machine has no processors of those kinds "
                           f"({self._machine.describe()}). Add a CPU variant or processors of that kind.")

    def select_processor(self, task_info, point, machine):
        tag = task_info.tag
        if isinstance(tag, Processor):
            return tag
        k = 0
        if task_info.index_launch:
            for c, d in zip(point, task_info.domain, strict=True):
                k = k * d + c
        if type(tag) is tuple and tag and isinstance(tag[0], Processor):
            return _placed(self, task_info, point, tag, k)
        procs = self._procs(task_info)
        if task_info.index_launch:
            return procs[k % len(procs)]
        return self._single(task_info, procs, None)

    def _single(self, task_info, procs, regions):
        kind = procs[0].kind
        rt = self._runtime
        if rt is not None and regions is not None:
            for priv, r in zip(task_info.privileges, regions, strict=False):
                if priv.code == READ_WRITE or priv.code == REDUCE:
                    p = rt.last_writer(r)
                    if p is not None and p.kind is kind:
                        return p
        i = self._rr.get(id(procs), 0)
        self._rr[id(procs)] = i + 1
        return procs[i % len(procs)]

    def select_memory(self, task_info, point, processor, arg_index, region, privilege):
        return self._local[processor.uid]

    def map_point(self, task_info, point, k, regions):
        if not self._fast:
            return Mapper.map_point(self, task_info, point, k, regions)
        tag = task_info.tag
        if isinstance(tag, Processor):
            proc = tag
            validate_processor(self, task_info, point, proc)
        elif type(tag) is tuple and tag and isinstance(tag[0], Processor):
            proc = _placed(self, task_info, point, tag, k)
        else:
            procs = self._procs(task_info)
            if task_info.index_launch:
                proc = procs[k % len(procs)]
            else:
                proc = self._single(task_info, procs, regions)
        return proc, [self._local[proc.uid]] * len(regions)


def _who(mapper) -> str:
    return type(mapper).__name__


def _placed(mapper, info: TaskInfo, point, placement: tuple, k: int) -> Processor:
    """Point `k`'s processor from an explicit placement (a tuple of Processors, one per point)."""
    if k >= len(placement):
        raise MappingError(f"Mapper {_who(mapper)}: task '{info.name}' point {point} (number {k}) has no entry in "
                           f"its placement of {len(placement)} processor(s); give one Processor per point of "
                           f"the launch domain {info.domain}.")
    proc = placement[k]
    validate_processor(mapper, info, point, proc)
    return proc


def validate_processor(mapper, info: TaskInfo, point, proc) -> None:
    """Raise MappingError unless `proc` is a processor of the machine with a variant of the task."""
    machine = info.machine
    if not isinstance(proc, Processor) or not machine.has(proc):
        raise MappingError(
            f"Mapper {_who(mapper)}.select_processor returned {proc!r} for task '{info.name}' point {point}, "
            f"which is not a processor of this machine ({', '.join(p.name for p in machine.processors())}). "
            f"Return one of machine.processors(kind).")
    if proc.kind not in info.variants:
        have = ", ".join(k.value for k in info.variants)
        raise MappingError(
            f"Mapper {_who(mapper)}.select_processor chose {proc.name} for task '{info.name}' point {point}, "
            f"but the task has no {proc.kind.value} variant (it has: {have}). Map it to a processor of "
            f"those kinds, or register a body with @{info.name}.variant(ProcKind.{proc.kind.value}).")


def validate_memory(mapper, info: TaskInfo, point, proc, arg_index: int, region, mem) -> None:
    """Raise MappingError unless `mem` is a memory of the machine that `proc` can address."""
    machine = info.machine
    if not isinstance(mem, Memory) or not machine.has_memory(mem):
        raise MappingError(
            f"Mapper {_who(mapper)}.select_memory returned {mem!r} for argument {arg_index} "
            f"({region.name}) of task '{info.name}' point {point}, which is not a memory of this machine. "
            f"Return one of machine.memories(kind).")
    if not machine.can_address(proc, mem):
        ok = ", ".join(m.name for m in machine.addressable(proc))
        raise MappingError(
            f"Mapper {_who(mapper)}.select_memory placed argument {arg_index} ({region.name}) of task "
            f"'{info.name}' point {point} in {mem.name}, which {proc.name} cannot address. Choose one of "
            f"the memories {proc.name} can address: {ok}.")
