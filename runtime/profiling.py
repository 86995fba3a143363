"""Profiling: a timeline of every task (processor, start, end) written as Chrome trace / Perfetto JSON.

Turned on by `-lg:prof` (Machine or Runtime args), `Runtime(profile=True)` or `rtm.start_profiling()`.
Workers append one tuple per node they run (a list append, safe under the GIL); the JSON is built only
when asked for. Open the file in https://ui.perfetto.dev or chrome://tracing. Task events have
`cat: "task"` (exactly one per point task that ran), reduction folds `cat: "fold"`; each processor is
one thread row.
"""

from __future__ import annotations

import json
import os
import threading
import time

from runtime.graph import FoldNode, TaskNode


class Profiler:
    """Collects (node, start_ns, end_ns, thread) records while active."""

    def __init__(self):
        self.origin = time.perf_counter_ns()
        self.records: list[tuple] = []

    def record(self, node, t0: int, t1: int) -> None:
        self.records.append((node, t0, t1, threading.current_thread().name))

    def events(self, machine) -> list[dict]:
        """The Chrome trace events (metadata rows first, then one complete event per record)."""
        tids = {p.name: p.uid for p in machine.processors()}
        out: list[dict] = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
                            "args": {"name": "runtime"}}]
        for p in machine.processors():
            out.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": p.uid, "args": {"name": p.name}})
        main_tid = len(tids)
        out.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": main_tid, "args": {"name": "issuer"}})
        for node, t0, t1, thread in self.records:
            if isinstance(node, TaskNode):
                cat = "task"
                name, point = node.task.name, node.point
                proc = node.proc.name
                tid = tids.get(proc, main_tid)
                args = {"point": list(point), "processor": proc, "launch": node.launch, "thread": thread}
            elif isinstance(node, FoldNode):
                cat = "fold"
                name, point = node.label()
                owner = node.owner.proc.name
                tid = tids.get(owner, main_tid)
                args = {"point": list(point), "processor": owner, "thread": thread}
            else:
                continue
            out.append({"name": name, "cat": cat, "ph": "X", "pid": 0, "tid": tid,
                        "ts": (t0 - self.origin) / 1e3, "dur": max(0.0, (t1 - t0) / 1e3), "args": args})
        return out

    def write(self, path: str, machine) -> str:
        """Write the timeline to `path` (JSON) and return the path."""
        doc = {"traceEvents": self.events(machine), "displayTimeUnit": "ms",
               "otherData": {"machine": machine.describe()}}
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return path
