"""The machine model the search plans for: devices, memories, links and their speeds.

A `MachineModel` is either this process's machine (`from_runtime`: its CPU or GPU processors, with the
bandwidths the runtime knows and the host's core count) or a described one (`from_file`: a JSON
machine-model file, see `machines/*.json`), optionally scaled to more nodes or devices per node than are
present (`--search-num-nodes`, `--search-num-workers`) to search for a larger machine.

Under `mpiexec -n N` this process's machine is N nodes: `from_runtime(..., world)` describes this node's
devices with `replicas` = N and the network link between the nodes that `runtime.comm` measured at
start-up (`replica_link`). Every node trains its shard of the batch with the node's strategy (execution/
distributed.py), so the search plans the node's strategy and the simulator adds, for every trainable
weight, the sum of its gradient over the N nodes on that link (`allreduce_time`) between the weight's
last gradient piece and its update.

Devices are the processors of the kind a strategy uses (its `devices` indices). Each device works in
one memory (a GPU in its framebuffer; the CPU processors of a node share the node's system memory), and
data moves between memories over links: the route between two memories is a list of links, each a
resource that carries one transfer at a time (the simulator's contention), with a bandwidth (bytes/s)
and a latency (s). Devices in the same memory exchange data for free. CPU processors share their node's
cores: at most `cores` CPU tasks of a node run at once.

File format (`flexflow_keras.machine/1`)::

    {"format": "flexflow_keras.machine/1", "name": "...", "nodes": 2,
     "device": {"kind": "GPU", "name": "V100", "flops": 15.7e12, "memory_bandwidth": 900e9,
                "capacity_gb": 16},
     "devices_per_node": 8,
     "intra_node": [{"devices": [0, 1], "bandwidth": 25e9, "latency": 1e-6, "lanes": 1}, ...],
     "intra_node_default": {"bandwidth": 16e9, "latency": 5e-6, "via": "host"},
     "inter_node": {"bandwidth": 12.5e9, "latency": 2e-6}}

`intra_node` lists direct device-to-device links (NVLink; `lanes` parallel links add bandwidth); pairs
without one go through `intra_node_default`: "via": "host" is through each device's PCIe link and host
memory, "via": "switch" through each device's port on a switch (NVSwitch: a device's port carries all
its traffic). Between nodes a transfer crosses the sender's PCIe link, the sending and the receiving
network links (one per node, or one per device with "per_device": true, rail-optimised clusters) and
the receiver's PCIe link.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

from flexflow_keras.errors import ConfigError

FORMAT = "flexflow_keras.machine/1"
GB = 1 << 30
MACHINES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "machines")


@dataclass(frozen=True)
class DeviceSpec:
    """One device: where it is, how fast it computes and moves its memory, how much memory it has."""

    index: int
    node: int
    kind: str  # "CPU" or "GPU"
    name: str
    flops: float  # peak FLOP/s (float32)
    memory_bandwidth: float  # bytes/s to its working memory
    capacity: int  # bytes of its working memory (its share when devices share one)
    memory: int  # the id of its working memory


@dataclass(frozen=True)
class Link:
    """A resource that carries one transfer at a time."""

    id: int
    name: str
    bandwidth: float
    latency: float


@dataclass
class MachineModel:
    """Devices, memories and the routes between memories (see the module docstring).

    Attributes:
        name: for logs. kind: "CPU" or "GPU". devices: DeviceSpec per device index.
        nodes: node count. cores: CPU cores per node (CPU tasks of a node run at most this many at once).
        links: every Link. routes: (src memory, dst memory) -> tuple of link ids.
        present: True for the machine of this process (costs are measured), False for a described one.
    """

    name: str
    kind: str
    devices: list[DeviceSpec]
    nodes: int
    cores: int
    links: list[Link] = field(default_factory=list)
    routes: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)
    present: bool = False
    source: str = ""
    host_links: dict[int, tuple[int, ...]] = field(default_factory=dict)  # device -> links from host memory
    replicas: int = 1  # nodes that each run this model's devices on their shard of the batch (MPI ranks)
    replica_link: int = -1  # the link id of the network between those nodes (when replicas > 1)
    # this machine's cores that other processes left free when the search began (runtime/cpuload.py), as
    # the engine sizes its BLAS threads from them (Engine._apply_thread_policy); None: all of `cores`
    free_cores: int | None = None

    @property
    def n(self) -> int:
        return len(self.devices)

    def route(self, src_mem: int, dst_mem: int) -> tuple[int, ...]:
        """Link ids a transfer from memory `src_mem` to `dst_mem` crosses (empty: the same memory)."""
        if src_mem == dst_mem:
            return ()
        return self.routes[(src_mem, dst_mem)]

    def transfer_time(self, src_mem: int, dst_mem: int, nbytes: float) -> float:
        """Seconds to move `nbytes` without contention (the slowest link of the route sets the pace)."""
        r = self.route(src_mem, dst_mem)
        if not r or nbytes <= 0:
            return 0.0
        links = [self.links[i] for i in r]
        return sum(lk.latency for lk in links) + nbytes / min(lk.bandwidth for lk in links)

    def allreduce_time(self, nbytes: float) -> float:
        """Seconds to sum `nbytes` over the `replicas` nodes on the network link (a ring: 2(N-1) steps of
        1/N of the bytes each); 0 on one node."""
        n = self.replicas
        if n <= 1 or self.replica_link < 0 or nbytes <= 0:
            return 0.0
        lk = self.links[self.replica_link]
        return 2 * (n - 1) * (lk.latency + nbytes / n / lk.bandwidth)

    def signature(self) -> str:
        """A short identity for caches: kind, devices, speeds and capacity."""
        d = self.devices[0]
        # the network between MPI ranks is measured at every start-up: its figures would make every run's
        # key new, so only the rank count enters (`/x N` below)
        links = [(lk.bandwidth, lk.latency) for lk in self.links if lk.id != self.replica_link]
        wiring = hashlib.sha1(repr((self.name, links, sorted(self.routes.items()))).encode()).hexdigest()[:12]
        return (f"{self.kind}x{self.n}/{self.nodes}n/{self.cores}c/{d.name}/{d.flops:.3g}/"
                f"{d.memory_bandwidth:.3g}/{d.capacity}/{wiring}" + (f"/x{self.replicas}" if self.replicas > 1 else ""))

    def summary(self) -> dict:
        """What a strategy file records of the machine it was searched for."""
        gpus = self.n if self.kind == "GPU" else 0
        return {"gpus": gpus // self.nodes if gpus else 0, "cpus": self.n // self.nodes if not gpus else 0,
                "nodes": self.nodes * self.replicas}

    def describe(self) -> str:
        d = self.devices[0]
        text = (f"{self.name}: {self.n} {self.kind} device(s) ({d.name}) on {self.nodes} node(s)"
                + (f", {self.cores} cores per node" if self.kind == "CPU" else ""))
        if self.replicas > 1:
            lk = self.links[self.replica_link]
            text += (f", x {self.replicas} nodes (MPI ranks) training their shards of the batch, gradients summed "
                     f"over a link of {lk.bandwidth / 1e9:.2f} GB/s and {lk.latency * 1e6:.1f} us (measured)")
        return text

    # --- constructors -------------------------------------------------------------------------------
    @classmethod
    def from_runtime(cls, machine, cores: int | None = None, world=None) -> MachineModel:
        """The machine of this process: its GPUs when it has some, else its CPU processors; under MPI
        (`world`: runtime.comm's World of several ranks), this node x the ranks over their measured link."""
        m = cls._this_node(machine, cores)
        if world is None or world.size <= 1 or not world.links:
            return m
        # every rank has rank 0's ping-pong figures; the slowest link sets the pace of a collective
        bw = min(lk.bandwidth for lk in world.links)
        lat = max(lk.latency for lk in world.links)
        m.links = [*m.links, Link(len(m.links), "net", bw, lat)]
        m.replicas, m.replica_link = world.size, len(m.links) - 1
        return m

    @classmethod
    def _this_node(cls, machine, cores: int | None = None) -> MachineModel:
        from runtime import MemKind, ProcKind
        from runtime.comm import host_cores

        cores = cores or host_cores()
        gpus = machine.processors(ProcKind.GPU)
        if gpus:
            devices, links, routes = [], [], {}
            zc = machine.memories(MemKind.ZERO_COPY)[0]
            for i, p in enumerate(gpus):
                fb = machine.local_memory(p)
                info = machine.gpu_devices[p.device]
                aff = machine.affinity(p, fb)
                devices.append(DeviceSpec(i, 0, "GPU", info.get("name", "GPU"), float(info.get("flops", 14e12)),
                                          aff.bandwidth, fb.capacity, i))
            for i in range(len(gpus)):
                ch = machine.channel(machine.memories(MemKind.SYSTEM)[0], machine.local_memory(gpus[i]))
                links.append(Link(i, f"pcie{i}", ch.bandwidth, ch.latency))
            _host_routes(routes, len(gpus), lambda i: (i,))
            del zc
            return cls("this machine", "GPU", devices, 1, cores, links, routes, True, "runtime",
                       {i: (i,) for i in range(len(gpus))})
        cpus = machine.processors(ProcKind.CPU)
        sysmem = machine.memories(MemKind.SYSTEM)[0]
        aff = machine.affinity(cpus[0], sysmem)
        share = sysmem.capacity // max(1, len(cpus))
        devices = [DeviceSpec(i, 0, "CPU", "CPU", _cpu_flops(cores, len(cpus)), aff.bandwidth, share, 0)
                   for i in range(len(cpus))]
        return cls("this machine", "CPU", devices, 1, cores, [], {}, True, "runtime")

    @classmethod
    def from_file(cls, path: str) -> MachineModel:
        """Read a machine-model file (see the module docstring); a bare name looks in `machines/`.

        Raises:
            ConfigError: naming the file and what is wrong.
        """
        full = path
        if not os.path.exists(full) and os.sep not in path:
            cand = os.path.join(MACHINES_DIR, path if path.endswith(".json") else path + ".json")
            if os.path.exists(cand):
                full = cand
        who = f"--machine-model-file {path}"
        if not os.path.isfile(full):
            names = ", ".join(sorted(f[:-5] for f in os.listdir(MACHINES_DIR) if f.endswith(".json")))
            what = "is a folder" if os.path.isdir(full) else "exists but is not a regular file" if \
                os.path.exists(full) else "no such file"
            raise ConfigError(f"{who}: {what}. Give a machine-model JSON file, or one of the shipped "
                              f"models: {names}.")
        try:
            with open(full, encoding="utf-8") as f:
                doc = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{who}: not valid JSON ({e}).") from None
        except OSError as e:
            raise ConfigError(f"{who}: cannot be read ({e.strerror}). Check the file's permissions.") from None
        return cls.from_dict(doc, who)

    @classmethod
    def from_dict(cls, doc: dict, who: str = "machine model") -> MachineModel:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ConfigError(f"{who}: expected a JSON object with \"format\": \"{FORMAT}\".")
        try:
            dev = doc["device"]
            nodes = int(doc.get("nodes", 1))
            per = int(doc["devices_per_node"])
            kind = str(dev.get("kind", "GPU")).upper()
            spec = (str(dev.get("name", kind)), float(dev["flops"]), float(dev["memory_bandwidth"]),
                    int(float(dev["capacity_gb"]) * GB))
            intra = [(tuple(int(d) for d in e["devices"]), float(e["bandwidth"]) * int(e.get("lanes", 1)),
                      float(e["latency"])) for e in doc.get("intra_node", [])]
            default = dict(doc.get("intra_node_default", {"bandwidth": 12e9, "latency": 1e-5, "via": "host"}))
            inter = dict(doc.get("inter_node", {"bandwidth": 12.5e9, "latency": 2e-6}))
            for section, link in (("intra_node_default", default), ("inter_node", inter)):
                for key in ("bandwidth", "latency"):
                    if key not in link:
                        raise KeyError(f"{section}.{key}")
                    link[key] = float(link[key])
                if link["bandwidth"] <= 0 or link["latency"] < 0:
                    raise ValueError(f"{section} needs a positive bandwidth and a latency of 0 or more")
            if any(b <= 0 or lat < 0 or min(devs) < 0 for devs, b, lat in intra):
                raise ValueError("intra_node links need device indices of 0 or more, a positive bandwidth "
                                 "and a latency of 0 or more")
            cores = int(doc.get("cores_per_node", 32))
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"{who}: missing or malformed field ({type(e).__name__}: {e}). See the format "
                              f"in flexflow_keras/search/machine.py.") from None
        if nodes < 1 or per < 1 or spec[1] <= 0 or spec[2] <= 0 or spec[3] <= 0:
            raise ConfigError(f"{who}: nodes, devices_per_node, flops, memory_bandwidth and capacity_gb must be "
                              f"positive.")
        return build(doc.get("name", who), kind, spec, nodes, per, intra, default, inter, cores, who)

    def scaled(self, nodes: int | None = None, per_node: int | None = None) -> MachineModel:
        """The same kind of machine with more (or fewer) nodes or devices per node (search only). Under MPI
        the nodes default to the ranks, and the network between nodes is the link measured between them."""
        nodes = nodes or self.nodes * self.replicas
        per = per_node or self.n // self.nodes
        d = self.devices[0]
        measured = self.links[self.replica_link] if self.replicas > 1 else None
        net_bw, net_lat = (measured.bandwidth, measured.latency) if measured else (12.5e9, 2e-6)
        if self.kind == "CPU" and self.present:
            devices = [DeviceSpec(i, i // per, "CPU", d.name, d.flops, d.memory_bandwidth, d.capacity, i // per)
                       for i in range(nodes * per)]
            links, routes = [], {}
            net = [Link(k, f"net{k}", net_bw, net_lat) for k in range(nodes)]
            links.extend(net)
            for a in range(nodes):
                for b in range(nodes):
                    if a != b:
                        routes[(a, b)] = (a, b)
            return MachineModel(f"{self.name} scaled to {nodes} node(s) x {per}", "CPU", devices, nodes,
                                self.cores, links, routes, False, self.source)
        spec = (d.name, d.flops, d.memory_bandwidth, d.capacity)
        # a model of this machine's GPUs has no link table: its devices talk through the host's PCIe links
        default = getattr(self, "_default", None) or {"bandwidth": self.links[0].bandwidth,
                                                     "latency": self.links[0].latency, "via": "host"}
        inter = getattr(self, "_inter", None) or {"bandwidth": net_bw, "latency": net_lat}
        # a smaller node keeps the links among its devices
        intra = [e for e in getattr(self, "_intra", ()) if max(e[0]) < per]
        return build(f"{self.name} scaled to {nodes} node(s) x {per}", self.kind, spec, nodes, per,
                     intra, default, inter, self.cores, self.source)


def _cpu_flops(cores: int, procs: int) -> float:
    """Nominal peak FLOP/s of one CPU processor: its share of the cores at 32 float32 FLOP/cycle, 2.5 GHz
    (AVX2 FMA). Only the roofline reads it; measured kernel times replace it where they exist."""
    return max(1.0, cores / max(1, procs)) * 2.5e9 * 32


def _host_routes(routes: dict, n: int, pcie_of) -> None:
    for a in range(n):
        for b in range(n):
            if a != b:
                routes[(a, b)] = tuple(pcie_of(a)) + tuple(pcie_of(b))


def build(name, kind, spec, nodes, per, intra, default, inter, cores, source) -> MachineModel:
    """A homogeneous machine: `nodes` x `per` devices of `spec` (name, flops, bandwidth, capacity)."""
    devname, flops, bw, cap = spec
    devices = [DeviceSpec(i, i // per, kind, devname, flops, bw, cap, i) for i in range(nodes * per)]
    links: list[Link] = []
    routes: dict = {}

    def add(lname, bandwidth, latency) -> int:
        links.append(Link(len(links), lname, float(bandwidth), float(latency)))
        return len(links) - 1

    pcie = [add(f"pcie{i}", default["bandwidth"], default["latency"]) for i in range(nodes * per)]
    per_dev = bool(inter.get("per_device", False))
    nics = [add(f"net{k}", inter["bandwidth"], inter["latency"]) for k in range(nodes * per if per_dev else nodes)]
    switched = default.get("via") == "switch"

    def nic(dev: int) -> int:
        return nics[dev] if per_dev else nics[dev // per]

    direct: dict[tuple[int, int], int] = {}
    for k in range(nodes):
        for (a, b), lbw, llat in intra:
            if a >= per or b >= per:
                raise ConfigError(f"{source}: intra_node link {[a, b]} names a device outside 0..{per - 1}.")
            ga, gb = k * per + a, k * per + b
            lid = add(f"link{ga}-{gb}", lbw, llat)
            direct[(ga, gb)] = direct[(gb, ga)] = lid
    for a in range(nodes * per):
        for b in range(nodes * per):
            if a == b:
                continue
            if (a, b) in direct:
                routes[(a, b)] = (direct[(a, b)],)
            elif a // per == b // per:
                routes[(a, b)] = (pcie[a], pcie[b])  # host or switch ports, by `default`
            elif switched or per_dev:
                routes[(a, b)] = (nic(a), nic(b))  # GPUDirect RDMA from the device's own NIC
            else:
                routes[(a, b)] = (pcie[a], nic(a), nic(b), pcie[b])
    if switched:  # the ports carry device-to-device traffic; the host is reached over separate PCIe links
        host_pcie = [add(f"hostpcie{i}", inter.get("host_bandwidth", 25e9), 1e-5) for i in range(nodes * per)]
        host = {d: (host_pcie[d],) for d in range(nodes * per)}
    else:
        host = {d: (pcie[d],) for d in range(nodes * per)} if kind == "GPU" else {}
    m = MachineModel(name, kind, devices, nodes, cores, links, routes, False, source, host)
    m._intra, m._default, m._inter = intra, default, inter
    return m
