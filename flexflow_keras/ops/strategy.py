"""Parallelization strategies as values: `ParallelConfig` (one op) and `Strategy` (the whole graph), and
their JSON file format.

A `ParallelConfig` gives, for one op, a degree per output dim (batch first), an optional number of
partial results of a split contraction (`reduce`), and the processors its pieces run on (`devices`,
indices into the processors of the kind used, one per piece, pieces in C order of (degrees..., reduce)).
A `Strategy` maps stable op names (ops/naming.py) to configs and remembers where it came from. The
search proposes strategies, each op's parallel rules check them (`check_strategy`), the execution runs
whatever it is given. Data parallelism is one strategy: `Strategy.data_parallel(graph, n)`.

File format (`--export-strategy` / `--import-strategy`)::

    {"format": "flexflow_keras.strategy/1",
     "machine": {"gpus": 0, "cpus": 4, "nodes": 1},
     "ops": {"dense_1": {"degrees": [1, 2], "devices": [0, 1]},
             "dense_2": {"degrees": [2, 1], "reduce": 2, "devices": [0, 1, 2, 3]}}}
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from flexflow_keras.errors import StrategyError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.graph import OpGraph
from flexflow_keras.ops.naming import node_names

FORMAT = "flexflow_keras.strategy/1"


def _ints(values, what: str, who: str) -> tuple[int, ...]:
    try:
        out = tuple(int(v) for v in values)
    except (TypeError, ValueError):
        raise StrategyError(f"{who}: {what} must be a list of integers, received {values!r}.") from None
    if any(isinstance(v, bool) for v in values):
        raise StrategyError(f"{who}: {what} must be a list of integers, received {values!r}.")
    return out


@dataclass(frozen=True)
class ParallelConfig:
    """How one op is split: `degrees` per output dim, `reduce` partial sums, and the `devices` of its pieces.

    Args:
        degrees: one positive degree per output dim, batch first.
        devices: one processor index per piece (`math.prod(degrees) * reduce` of them).
        reduce: how many partial results a split contraction makes (1: none).

    Example:
        >>> ParallelConfig((1, 2), (0, 1))     # a Dense split along its output features on 2 processors
    """

    degrees: tuple[int, ...]
    devices: tuple[int, ...]
    reduce: int = 1

    def __post_init__(self):
        who = "ParallelConfig"
        object.__setattr__(self, "degrees", _ints(self.degrees, "degrees", who))
        object.__setattr__(self, "devices", _ints(self.devices, "devices", who))
        object.__setattr__(self, "reduce", int(self.reduce))
        if any(d < 1 for d in self.degrees) or self.reduce < 1:
            raise StrategyError(f"{who}: degrees and reduce must be positive, received degrees "
                                f"{list(self.degrees)}, reduce={self.reduce}.")
        if len(self.devices) != self.n_pieces:
            raise StrategyError(f"{who}: degrees {list(self.degrees)} x reduce {self.reduce} make "
                                f"{self.n_pieces} pieces, so give {self.n_pieces} devices; received "
                                f"{len(self.devices)}: {list(self.devices)}.")
        if any(d < 0 for d in self.devices):
            raise StrategyError(f"{who}: device indices must be >= 0, received {list(self.devices)}.")

    @property
    def n_pieces(self) -> int:
        return math.prod(self.degrees) * self.reduce

    @property
    def color_shape(self) -> tuple[int, ...]:
        """The launch domain: the degrees, then the partial-result count when above 1."""
        return self.degrees + ((self.reduce,) if self.reduce > 1 else ())

    def is_replicated_over(self, dims: Iterable[int]) -> bool:
        return any(self.degrees[d] > 1 for d in dims)

    def with_sample_degree(self, dim: int, degree: int) -> ParallelConfig:
        """The same config with `dim` split `degree` ways (the first pieces' devices; tail batches)."""
        if degree >= self.degrees[dim]:
            return self
        keep = []
        shape = self.color_shape
        for k, color in enumerate(_colors(shape)):
            if color[dim] < degree:
                keep.append(self.devices[k])
        degrees = list(self.degrees)
        degrees[dim] = degree
        return ParallelConfig(tuple(degrees), tuple(keep), self.reduce)

    def to_json(self) -> dict:
        out: dict = {"degrees": list(self.degrees)}
        if self.reduce > 1:
            out["reduce"] = self.reduce
        out["devices"] = list(self.devices)
        return out

    def __str__(self) -> str:
        red = f" x{self.reduce} partial sums" if self.reduce > 1 else ""
        return f"{list(self.degrees)}{red} on {_ranges(self.devices)}"


def _colors(shape: Sequence[int]):
    import itertools

    return itertools.product(*(range(s) for s in shape))


def _ranges(devices: Sequence[int]) -> str:
    if len(devices) > 2 and list(devices) == list(range(devices[0], devices[0] + len(devices))):
        return f"[{devices[0]}..{devices[-1]}]"
    return "[" + ", ".join(map(str, devices)) + "]"


@dataclass(frozen=True)
class Strategy:
    """Op name -> `ParallelConfig`, and where the strategy came from (for the log).

    Build one from a mapping (`Strategy({"dense_1": ParallelConfig(...)})`), with
    `Strategy.data_parallel(graph, n)`, or from a file (`read_strategy_file`). Ops it does not name run
    data parallel (`complete` fills them in and says which).
    """

    configs: Mapping[str, ParallelConfig] = field(default_factory=dict)
    source: str = "code"

    def __post_init__(self):
        items = dict(self.configs)
        for k, v in items.items():
            if not isinstance(v, ParallelConfig):
                raise StrategyError(f"Strategy: op '{k}' maps to {v!r}; expected a ParallelConfig.")
        object.__setattr__(self, "configs", tuple(items.items()))
        object.__setattr__(self, "_index", items)

    def as_dict(self) -> dict[str, ParallelConfig]:
        return dict(self.configs)

    def get(self, name: str) -> ParallelConfig | None:
        return self._index.get(name)

    def names(self) -> list[str]:
        return [k for k, _ in self.configs]

    def __hash__(self):
        return hash(self.configs)

    def __eq__(self, other):
        return isinstance(other, Strategy) and dict(self.configs) == dict(other.configs)

    def with_source(self, source: str) -> Strategy:
        return Strategy(dict(self.configs), source)

    @classmethod
    def data_parallel(cls, graph: OpGraph, n: int, n_devices: int | None = None) -> Strategy:
        """Every op split `n` ways along its batch dim (ops without one: whole, on device 0).

        Args:
            graph: the op graph (a model's, or its training graph with the losses).
            n: the data-parallel degree.
            n_devices: how many processors there are (pieces go to processor k mod n_devices).
        """
        n = int(n)
        if n < 1:
            raise StrategyError(f"Strategy.data_parallel expects a positive degree, received {n}.")
        names = node_names(graph)
        out = {}
        for node in graph.nodes:
            out[names[node.uid]] = data_parallel_config(node, n, n_devices)
        return cls(out, f"data parallelism, degree {n}")

    def describe(self, max_lines: int | None = None) -> str:
        """One line per op: `name: degrees [..] on [..]`. With `max_lines`, a longer strategy lists the ops
        whose config differs from the most common one (at most `max_lines`) and counts the rest."""
        rows = [(k, str(v)) for k, v in self.configs]
        if max_lines is not None and len(rows) > max_lines:
            kinds = {k: _kind(v) for k, v in self.configs}
            common, n_common = Counter(kinds.values()).most_common(1)[0]
            others = [(k, v) for k, v in rows if kinds[k] != common]
            shown = others[:max_lines]
            width = max((len(k) for k, _ in shown), default=0)
            lines = [f"  {k:<{width}}  {v}" for k, v in shown]
            if len(others) > len(shown):
                lines.append(f"  ... and {len(others) - len(shown)} more ops with other configs")
            lines.append(f"  {'the other ' if others else 'all '}{n_common} ops: {common} (--export-strategy FILE "
                         "writes every op's config)")
            return "\n".join(lines)
        width = max((len(k) for k, _ in rows), default=0)
        return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


def _kind(config: ParallelConfig) -> str:
    """A config in words that ignore the op's rank: "not split, on [0]", "degrees [2, ...] on [0, 1]"."""
    degrees = list(config.degrees)
    while len(degrees) > 1 and degrees[-1] == 1:
        degrees.pop()
    devices = list(config.devices)
    if degrees == [1] and config.reduce == 1:
        return f"not split, on {devices}"
    reduce = f", x{config.reduce} partial sums" if config.reduce > 1 else ""
    shown = ", ".join(map(str, degrees)) + (", ..." if len(degrees) < len(config.degrees) else "")
    return f"degrees [{shown}]{reduce} on {devices}"


def devices_used(strategy: Strategy, n_devices: int | None = None) -> int:
    """How many distinct processors the strategy's pieces run on."""
    used = {d % n_devices if n_devices else d for _, c in strategy.configs for d in c.devices}
    return max(1, len(used))


def sample_dims(space: par.ParallelSpace) -> list[int]:
    return [d for d, r in enumerate(space.dims) if r.kind == par.SAMPLE and r.splittable]


def data_parallel_config(node, n: int, n_devices: int | None = None) -> ParallelConfig:
    """A node's data-parallel config: degree `n` on its first splittable sample dim (1 elsewhere)."""
    space = node_space(node)
    degrees = [1] * len(space.dims)
    sd = sample_dims(space)
    if sd and n > 1:
        degrees[sd[0]] = n
    pieces = math.prod(degrees)
    devs = tuple(k % n_devices if n_devices else k for k in range(pieces))
    return ParallelConfig(tuple(degrees), devs)


def node_space(node) -> par.ParallelSpace:
    return node.op.parallel_space([t.spec for t in node.inputs], [w.spec for w in node.weights])


def check_config(node, name: str, cfg: ParallelConfig, n_devices: int | None = None,
                 kind: str = "CPU") -> par.ParallelSpace:
    """Check one op's config against its rules and the machine.

    Raises:
        StrategyError: naming the op, the dim, the degree asked and the legal choices, or the device.
    """
    space = par.check_parallel(node.op, name, [t.spec for t in node.inputs], [w.spec for w in node.weights],
                               cfg.degrees, cfg.reduce)
    if n_devices is not None:
        bad = [d for d in cfg.devices if d >= n_devices]
        if bad:
            raise StrategyError(f"Strategy for op '{name}' places pieces on {kind} processor(s) {bad}, but this "
                                f"machine has {n_devices} {kind} processor(s) (0..{n_devices - 1}). Use device "
                                f"indices below {n_devices}, or start with more processors "
                                f"({'-ll:gpu' if kind == 'GPU' else '-ll:cpu'} {max(bad) + 1}).")
    return space


def check_strategy(graph: OpGraph, strategy: Strategy, n_devices: int | None = None, kind: str = "CPU") -> None:
    """Check every config of `strategy` against `graph`'s op rules and the machine; unknown op names too.

    Raises:
        StrategyError: for the first misfit, naming the op and what does not fit.
    """
    names = node_names(graph)
    by_name = {names[n.uid]: n for n in graph.nodes}
    unknown = [k for k in strategy.names() if k not in by_name]
    if unknown:
        known = ", ".join(sorted(by_name)[:20]) + (", ..." if len(by_name) > 20 else "")
        raise StrategyError(f"Strategy ({strategy.source}) names op(s) {unknown} that the model does not have. "
                            f"The model's ops are: {known}. Export a strategy for this model with "
                            f"--export-strategy to see the names.")
    for k, cfg in strategy.configs:
        check_config(by_name[k], k, cfg, n_devices, kind)


def complete(graph: OpGraph, strategy: Strategy, n: int, n_devices: int | None = None) -> tuple[Strategy, list[str]]:
    """`strategy` with the ops it does not name filled in as data parallel of degree `n`; and their names."""
    names = node_names(graph)
    configs = strategy.as_dict()
    missing = []
    for node in graph.nodes:
        k = names[node.uid]
        if k not in configs:
            configs[k] = data_parallel_config(node, n, n_devices)
            missing.append(k)
    return Strategy(configs, strategy.source), missing


# --- files ----------------------------------------------------------------------------------------------
def write_strategy_file(path: str, strategy: Strategy, machine: Mapping[str, int],
                        who: str = "--export-strategy") -> None:
    """Write `strategy` as JSON (see the module docstring), atomically; `who` names the writer in errors."""
    doc = {"format": FORMAT, "machine": dict(machine),
           "ops": {k: v.to_json() for k, v in strategy.configs}}
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise StrategyError(f"{who} {path}: cannot write the strategy file ({e.strerror}). Give a "
                            f"path in a writable folder.") from None


def read_strategy_file(path: str, who: str = "--import-strategy") -> tuple[Strategy, dict]:
    """Read a strategy file; returns (strategy, the machine it was written for). `who` names the reader in
    errors (the flag, or the code that gave the path).

    Raises:
        StrategyError: naming the file and what is wrong (missing, not JSON, wrong format, bad entries).
    """
    who = f"{who} {path}"
    if not os.path.exists(path):
        raise StrategyError(f"{who}: no such file. Write one with --export-strategy, or check the path.")
    if os.path.isdir(path):
        raise StrategyError(f"{who}: is a folder; give the path of a strategy JSON file.")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except UnicodeDecodeError:
        raise StrategyError(f"{who}: not a text file; give a strategy JSON file written by --export-strategy.") \
            from None
    except json.JSONDecodeError as e:
        raise StrategyError(f"{who}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}).") from None
    except OSError as e:
        raise StrategyError(f"{who}: cannot read it ({e.strerror}).") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise StrategyError(f"{who}: expected a JSON object with \"format\": \"{FORMAT}\", received format "
                            f"{got!r}. Write strategy files with --export-strategy.")
    ops = doc.get("ops")
    if not isinstance(ops, dict):
        raise StrategyError(f"{who}: \"ops\" must be an object mapping op names to "
                            "{\"degrees\": [...], \"devices\": [...]}.")
    configs = {}
    for name, entry in ops.items():
        if not isinstance(entry, dict) or "degrees" not in entry or "devices" not in entry:
            raise StrategyError(f"{who}: op '{name}' must be an object with \"degrees\" and \"devices\", "
                                f"received {entry!r}.")
        extra = sorted(set(entry) - {"degrees", "devices", "reduce"})
        if extra:
            raise StrategyError(f"{who}: op '{name}' has unknown keys {extra}; allowed: degrees, devices, "
                                f"reduce.")
        try:
            configs[name] = ParallelConfig(tuple(entry["degrees"]), tuple(entry["devices"]),
                                           entry.get("reduce", 1))
        except (StrategyError, TypeError) as e:
            raise StrategyError(f"{who}: op '{name}': {e}") from None
    machine = doc.get("machine") if isinstance(doc.get("machine"), dict) else {}
    return Strategy(configs, f"file {path}"), machine
