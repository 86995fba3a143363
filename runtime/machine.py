"""The machine: processors, memories, and which processor can address which memory at what speed.

Built from Legion-style flags (`Machine.from_args(["-ll:cpu", "2", "-ll:gpu", "1", ...])`, parsed the
way Legion parses them: space-separated flag and value, unknown arguments ignored) or from code
(`Machine(cpus=2, gpus=1, fsize=4096)`). GPUs are Numba CUDA devices (the simulator's device under
`NUMBA_ENABLE_CUDASIM=1`); every request is checked against the host before anything runs.

Capacities are bytes (the flags are MB = 2**20 bytes). Bandwidth (bytes/s) and latency (s) figures on
affinities and copy channels are what the strategy search reads; they are nominal figures for this
class of hardware unless the device reports its own (GPU memory clock and bus width).
"""

from __future__ import annotations

import enum
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from runtime import gpu as _gpu
from runtime.errors import MachineError

MB = 1 << 20

# nominal figures (bytes/s, seconds)
HOST_BANDWIDTH, HOST_LATENCY = 20e9, 1e-7
PCIE_BANDWIDTH, PCIE_LATENCY = 12e9, 1e-5
DEFAULT_SIM_FSIZE_MB = 1024


class ProcKind(enum.Enum):
    """Processor kinds, as in Legion: CPU (LOC_PROC), GPU (TOC_PROC), UTIL (runtime work)."""

    CPU = "CPU"
    GPU = "GPU"
    UTIL = "UTIL"

    __hash__ = object.__hash__  # members are singletons; identity hashing keeps dict lookups cheap


class MemKind(enum.Enum):
    """Memory kinds: host SYSTEM memory, a GPU's framebuffer, pinned host ZERO_COPY memory."""

    SYSTEM = "SYSTEM"
    GPU_FB = "GPU_FB"
    ZERO_COPY = "ZERO_COPY"

    __hash__ = object.__hash__


class Processor:
    """One processor (one worker thread). Compare and hash by `uid`."""

    __slots__ = ("kind", "index", "uid", "device", "name")

    def __init__(self, kind: ProcKind, index: int, uid: int, device: int | None = None):
        self.kind = kind
        self.index = index
        self.uid = uid
        self.device = device
        self.name = f"{kind.value}{index}"

    def __eq__(self, other):
        return isinstance(other, Processor) and other.uid == self.uid and other.kind is self.kind

    def __hash__(self):
        return hash(("proc", self.uid))

    def __repr__(self):
        return self.name


class Memory:
    """One memory with a capacity in bytes and the flag that sets it. Compare and hash by `uid`."""

    __slots__ = ("kind", "index", "uid", "capacity", "device", "name", "flag")

    def __init__(self, kind: MemKind, index: int, uid: int, capacity: int, flag: str, device: int | None = None):
        self.kind = kind
        self.index = index
        self.uid = uid
        self.capacity = capacity
        self.device = device
        self.flag = flag
        self.name = {MemKind.SYSTEM: "sysmem", MemKind.ZERO_COPY: "zcmem"}.get(kind, f"gpu{device}_fb")
        if kind is MemKind.SYSTEM and index:
            self.name += str(index)

    def __eq__(self, other):
        return isinstance(other, Memory) and other.uid == self.uid and other.kind is self.kind

    def __hash__(self):
        return hash(("mem", self.uid))

    def __repr__(self):
        return self.name


@dataclass(frozen=True)
class Affinity:
    """A processor can address a memory with this bandwidth (bytes/s) and latency (s)."""

    processor: Processor
    memory: Memory
    bandwidth: float
    latency: float


@dataclass(frozen=True)
class Channel:
    """How the runtime copies between two memories: `route` is "local", "direct" or "host"."""

    src: Memory
    dst: Memory
    bandwidth: float
    latency: float
    route: str


class CPUOnlyWarning(UserWarning):
    """GPUs are present but the machine was asked for none (`-ll:gpu 0`)."""


_INT_FLAGS = {"-ll:cpu": "cpus", "-ll:gpu": "gpus", "-ll:util": "utils", "-ll:fsize": "fsize",
              "-ll:zsize": "zsize", "-ll:csize": "csize"}


def parse_legion_args(argv: Sequence[str]) -> tuple[dict, list[str]]:
    """Split argv into the machine/profiler settings Legion would read and everything else.

    Recognises `-ll:cpu -ll:gpu -ll:util -ll:fsize -ll:zsize -ll:csize` (each followed by an integer),
    `-lg:prof N` (N > 0 turns profiling on; the count may be omitted) and `-lg:prof_logfile PATH`.
    """
    settings: dict = {}
    rest: list[str] = []
    argv = list(argv)
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _INT_FLAGS:
            if i + 1 >= len(argv):
                raise MachineError(f"Flag {arg} expects an integer value after it, e.g. {arg} 2; "
                                   f"received nothing")
            raw = argv[i + 1]
            try:
                value = int(raw)
            except ValueError:
                raise MachineError(f"Flag {arg} expects an integer value, received {raw!r}. "
                                   f"Example: {arg} 2") from None
            if value < 0:
                raise MachineError(f"Flag {arg} expects a non-negative integer, received {value}")
            settings[_INT_FLAGS[arg]] = value
            i += 2
        elif arg == "-lg:prof":
            if i + 1 < len(argv) and argv[i + 1].lstrip("-").isdigit():
                settings["profile"] = int(argv[i + 1]) > 0
                i += 2
            else:
                settings["profile"] = True
                i += 1
        elif arg == "-lg:prof_logfile":
            if i + 1 >= len(argv):
                raise MachineError("Flag -lg:prof_logfile expects a file path after it, received nothing")
            settings["profile_logfile"] = argv[i + 1]
            i += 2
        else:
            rest.append(arg)
            i += 1
    return settings, rest


def _physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 16 << 30


class Machine:
    """Processors and memories of this node, with capacities and affinities.

    Args:
        cpus: CPU processors (worker threads for task bodies), at least 1 (-ll:cpu).
        gpus: GPU processors, one per CUDA device used (-ll:gpu).
        utils: utility processors that run the runtime's own fills, reads and writes (-ll:util).
        fsize: framebuffer capacity per GPU in MB (-ll:fsize); default 90% of the device's free memory
            (1024 MB on the simulator).
        zsize: zero-copy memory in MB (-ll:zsize).
        csize: system memory in MB (-ll:csize); default the host's physical memory.
        profile: record a task timeline (-lg:prof).
        profile_logfile: where the runtime writes the timeline at shutdown (-lg:prof_logfile).

    Raises:
        MachineError: more GPUs than Numba sees, an fsize above a device's free memory, bad counts.
    """

    def __init__(self, cpus: int = 1, gpus: int = 0, utils: int = 1, fsize: int | None = None,
                 zsize: int = 64, csize: int | None = None, *, profile: bool = False,
                 profile_logfile: str | None = None):
        for flag, v in (("-ll:cpu", cpus), ("-ll:gpu", gpus), ("-ll:util", utils), ("-ll:zsize", zsize)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise MachineError(f"Machine: {flag} expects a non-negative integer, received {v!r}")
        if cpus < 1:
            raise MachineError(f"Machine needs at least one CPU processor (-ll:cpu 1), received -ll:cpu {cpus}")
        self.profile = bool(profile)
        self.profile_logfile = profile_logfile
        self.gpu_devices: list[dict] = []
        if gpus > 0:
            self.gpu_devices, fsize = self._check_gpus(gpus, fsize)
        else:
            self._warn_unused_gpus()
        if csize is None:
            csize_bytes = _physical_memory()
        else:
            csize_bytes = int(csize) * MB
        self.args = {"cpus": cpus, "gpus": gpus, "utils": utils, "fsize": fsize, "zsize": zsize,
                     "csize": csize if csize is not None else csize_bytes // MB}

        procs: list[Processor] = []
        for i in range(cpus):
            procs.append(Processor(ProcKind.CPU, i, len(procs)))
        for i in range(gpus):
            procs.append(Processor(ProcKind.GPU, i, len(procs), device=i))
        for i in range(utils):
            procs.append(Processor(ProcKind.UTIL, i, len(procs)))
        mems: list[Memory] = [Memory(MemKind.SYSTEM, 0, 0, csize_bytes, "-ll:csize")]
        for i in range(gpus):
            mems.append(Memory(MemKind.GPU_FB, i, len(mems), int(fsize) * MB, "-ll:fsize", device=i))
        mems.append(Memory(MemKind.ZERO_COPY, 0, len(mems), int(zsize) * MB, "-ll:zsize"))
        self._procs = tuple(procs)
        self._mems = tuple(mems)
        self._by_pkind = {k: [p for p in procs if p.kind is k] for k in ProcKind}
        self._by_mkind = {k: [m for m in mems if m.kind is k] for k in MemKind}
        self._affinity: dict[tuple[int, int], Affinity] = {}
        sysmem, zc = self._by_mkind[MemKind.SYSTEM][0], self._by_mkind[MemKind.ZERO_COPY][0]
        for p in procs:
            if p.kind is ProcKind.GPU:
                fb = self._by_mkind[MemKind.GPU_FB][p.device]
                bw = self.gpu_devices[p.device]["bandwidth"]
                self._add(p, fb, bw, _gpu.NOMINAL_FB_LATENCY)
                self._add(p, zc, PCIE_BANDWIDTH, PCIE_LATENCY)
            else:
                self._add(p, sysmem, HOST_BANDWIDTH, HOST_LATENCY)
                self._add(p, zc, HOST_BANDWIDTH, HOST_LATENCY)
        # memories each processor can address, fastest first (the default placement is the first)
        self._addressable = {
            p.uid: sorted((a.memory for a in self._affinity.values() if a.processor.uid == p.uid),
                          key=lambda m: -self._affinity[(p.uid, m.uid)].bandwidth)
            for p in procs}
        self._addr_sets = {uid: frozenset(m.uid for m in ms) for uid, ms in self._addressable.items()}
        self.nodes, self.node, self.links = 1, 0, ()  # one node unless set_nodes (MPI, runtime/comm.py)

    def set_nodes(self, nodes: int, node: int, links=()) -> None:
        """Make this machine node `node` of `nodes` identical nodes (one per MPI rank), with the links
        measured between them (`runtime.comm.Link`: bandwidth bytes/s, latency s)."""
        if not 0 <= node < nodes:
            raise MachineError(f"Machine.set_nodes: node {node} is not one of {nodes} node(s)")
        self.nodes, self.node, self.links = int(nodes), int(node), tuple(links)

    def _add(self, p, m, bw, lat):
        self._affinity[(p.uid, m.uid)] = Affinity(p, m, float(bw), float(lat))

    @staticmethod
    def _check_gpus(gpus: int, fsize: int | None):
        count, why = _gpu.device_count()
        if gpus > count:
            hint = ("Pass -ll:gpu 0 to train on the CPU, or set NUMBA_ENABLE_CUDASIM=1 to use the CUDA "
                    "simulator." if count == 0 else f"Pass -ll:gpu {count} or fewer, or check "
                    f"CUDA_VISIBLE_DEVICES.")
            seen = f"Numba sees {count} CUDA device(s)" + (f": {why}" if why else "")
            raise MachineError(f"-ll:gpu {gpus} asks for {gpus} GPU(s) but {seen}. {hint}")
        _gpu.quiet_small_grids()
        problem = _gpu.compiler_problem()
        if problem:
            raise MachineError(f"-ll:gpu {gpus}: {problem}; or pass -ll:gpu 0 to train on the CPU.")
        infos = [_gpu.device_info(i) for i in range(gpus)]
        if fsize is not None:
            if not isinstance(fsize, int) or isinstance(fsize, bool) or fsize < 0:
                raise MachineError(f"Machine: -ll:fsize expects a non-negative integer (MB), received {fsize!r}")
            for i, info in enumerate(infos):
                if fsize * MB > info["free"]:
                    raise MachineError(
                        f"-ll:fsize {fsize} MB is above the free memory of GPU {i} ({info['name']}): "
                        f"{info['free'] / MB:.0f} MB free of {info['total'] / MB:.0f} MB. "
                        f"Pass -ll:fsize {int(info['free'] // MB)} or less.")
        else:
            free = min(info["free"] for info in infos)
            fsize = int(0.9 * free) // MB if math.isfinite(free) else DEFAULT_SIM_FSIZE_MB
        return infos, fsize

    @staticmethod
    def _warn_unused_gpus():
        n = _gpu.probe_device_count()
        if n > 0:
            what = "the CUDA simulator's device" if _gpu.simulator_requested() else f"{n} CUDA device(s)"
            warnings.warn(f"This host has {what} but the machine was asked for -ll:gpu 0: training will "
                          f"run on the CPU. Pass -ll:gpu {n} to use the GPU(s).", CPUOnlyWarning, stacklevel=3)

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> Machine:
        """A machine from Legion flags; arguments the runtime does not know are ignored.

        Args:
            argv: e.g. `["-ll:cpu", "2", "-ll:gpu", "0", "-ll:zsize", "128", "-lg:prof", "1"]`.
        """
        settings, _ = parse_legion_args(argv)
        return cls(**settings)

    parse_args = staticmethod(parse_legion_args)

    def processors(self, kind: ProcKind | None = None) -> list[Processor]:
        """Processors of `kind` (all when None), in index order."""
        return list(self._procs) if kind is None else list(self._by_pkind[kind])

    def memories(self, kind: MemKind | None = None) -> list[Memory]:
        """Memories of `kind` (all when None)."""
        return list(self._mems) if kind is None else list(self._by_mkind[kind])

    def has(self, proc: Processor) -> bool:
        return isinstance(proc, Processor) and 0 <= proc.uid < len(self._procs) and self._procs[proc.uid] == proc

    def has_memory(self, mem: Memory) -> bool:
        return isinstance(mem, Memory) and 0 <= mem.uid < len(self._mems) and self._mems[mem.uid] == mem

    def can_address(self, proc: Processor, mem: Memory) -> bool:
        """Whether a task on `proc` can be handed an instance in `mem`."""
        return mem.uid in self._addr_sets.get(proc.uid, ())

    def addressable(self, proc: Processor) -> list[Memory]:
        """Memories `proc` can address, highest bandwidth first."""
        return list(self._addressable[proc.uid])

    def local_memory(self, proc: Processor) -> Memory:
        """The memory a processor works in by default: SYSTEM for CPU/UTIL, its framebuffer for a GPU."""
        return self._addressable[proc.uid][0]

    def affinity(self, proc: Processor, mem: Memory) -> Affinity | None:
        return self._affinity.get((proc.uid, mem.uid))

    def affinities(self) -> list[Affinity]:
        return list(self._affinity.values())

    def channel(self, src: Memory, dst: Memory) -> Channel:
        """Bandwidth and latency of the runtime's copy path from `src` to `dst`."""
        if src == dst:
            bw = self.gpu_devices[src.device]["bandwidth"] if src.kind is MemKind.GPU_FB else HOST_BANDWIDTH
            return Channel(src, dst, bw, HOST_LATENCY, "local")
        host = (MemKind.SYSTEM, MemKind.ZERO_COPY)
        if src.kind in host and dst.kind in host:
            return Channel(src, dst, HOST_BANDWIDTH, HOST_LATENCY, "direct")
        if src.kind in host or dst.kind in host:
            return Channel(src, dst, PCIE_BANDWIDTH, PCIE_LATENCY, "direct")
        return Channel(src, dst, PCIE_BANDWIDTH / 2, 2 * PCIE_LATENCY, "host")

    def describe(self) -> str:
        """One line per processor kind and memory, for logs."""
        parts = [f"{len(self._by_pkind[k])} {k.value}" for k in ProcKind]
        mems = ", ".join(f"{m.name} {m.capacity / MB:.0f} MB" for m in self._mems)
        gpus = "; ".join(d["name"] for d in self.gpu_devices)
        if self.nodes > 1:
            parts.append(f"node {self.node} of {self.nodes}")
        return f"Machine({', '.join(parts)}; memories: {mems}" + (f"; GPUs: {gpus})" if gpus else ")")

    def __repr__(self):
        return self.describe()
