"""Runtime overhead: microseconds per empty task, single launches and per point of index launches.

Run: python benchmarks/runtime_overhead.py [--tasks N] [--executor threaded|sequential|both] [--no-help]
     [--interpreted-too]

Each row issues N empty tasks and waits for all of them (fence); the figure is wall time / tasks.
"independent" tasks read one shared region (RO), so they may all run concurrently; "chain" tasks
read-write one region, so each waits for the previous one; index launches write their own subregion
(WD) of a (D, 1)-partitioned region and read a whole weight region (RO), the shape of a training step.
"wide" index launches pass 20 region arguments per point (10 RO, 5 Reduce("+") weight gradients
zeroed by a fill first, 2 WD, 3 RO), like a backward task of a training step.
"step-shaped" traces are what a training step issues per trace: 4 index launches whose points get
`POINT`, then 4 single updates placed by a processor tuple rebuilt every step (12 tasks per trace, so
the trace's own begin/end cost counts).
Traced rows run the same launches inside `rtm.trace(...)`, recorded once and then replayed; "traced,
wait=False" rows leave each trace without waiting (a training step's `rtm.trace(..., wait=False)`).
Targets (issue 8: a small model's CUDA kernel takes ~10 us): <= 15 us untraced, <= 3 us traced.
On the threaded executor a thread that waits runs ready points of idle processors itself (runtime/
workers.py); `--no-help` adds a threaded column with that turned off (FF_HOST_HELPS=0).

The runtime's hot modules are compiled by Cython when the project is installed (setup.py); the table says
whether they ran compiled, and `--interpreted-too` adds the same table with FF_INTERPRETED=1 (the .py
sources interpreted, as where nothing is built), from a fresh process in the same run.

Each figure is the best of --repeats runs, as wall time per task and as the process's CPU time per task
(every thread: the issuing one and the workers). On a shared machine the CPU figure is the steadier
one: wall time also counts the time other processes hold the cores.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import runtime as rt  # noqa: E402


@rt.task(privileges=[rt.RO])
def empty_ro(x):
    return None


@rt.task(privileges=[rt.RW])
def empty_rw(x):
    return None


@rt.task(privileges=[rt.WD, rt.RO])
def empty_point(y, w, step):
    return None


@rt.task(privileges=[rt.WD, rt.RO, rt.RO])
def empty_forward(y, x, w, step, point):
    return None


@rt.task(privileges=[rt.RW, rt.RO])
def empty_update(w, g, lr):
    return None


# a training-step-shaped task: activations in, weights whole (RO), weight gradients reduced, outputs out
WIDE_PRIVILEGES = [rt.RO] * 10 + [rt.Reduce("+")] * 5 + [rt.WD] * 2 + [rt.RO] * 3


@rt.task(privileges=WIDE_PRIVILEGES)
def empty_wide(*args):
    return None


def _timed(rtm, issue, ntasks: int) -> tuple[float, float]:
    """(wall, CPU) microseconds per task of `issue()` and the fence after it."""
    rtm.fence()
    t0, c0 = time.perf_counter(), time.process_time()
    issue()
    rtm.fence()
    return ((time.perf_counter() - t0) / ntasks * 1e6, (time.process_time() - c0) / ntasks * 1e6)


def _best(runs) -> tuple[float, float]:
    runs = list(runs)
    return min(r[0] for r in runs), min(r[1] for r in runs)


def bench(executor: str, n: int, degree: int, repeats: int) -> list[tuple[str, tuple[float, float]]]:
    rows = []
    machine = rt.Machine(cpus=2, utils=1)
    with rt.Runtime(machine, executor=executor) as rtm:
        R = rt.Region((64, 16), np.float32, name="act")
        W = rt.Region((16, 16), np.float32, name="w")
        P = rt.Partition.equal(R, (degree, 1))
        per_trace = 50

        def single_ro():
            for _ in range(n):
                rtm.launch(empty_ro, W)

        def single_rw():
            for _ in range(n):
                rtm.launch(empty_rw, W)

        def index():
            for i in range(n // degree):
                rtm.index_launch(empty_point, P.color_shape, P, W, i)

        acts = [rt.Region((64, 16), np.float32, name=f"a{i}") for i in range(5)]
        parts = [rt.Partition.equal(a, (degree, 1)) for a in acts]
        weights = [rt.Region((16, 16), np.float32, name=f"w{i}") for i in range(8)]
        grads = [rt.Region((16, 16), np.float32, name=f"g{i}") for i in range(5)]
        wide_args = parts[:3] + weights[:7] + grads + parts[3:5] + [weights[7], parts[0], parts[1]]
        wide_per_step = 10

        def wide_step(s):
            for g in grads:
                rtm.fill(g, 0.0)
            for _ in range(wide_per_step):
                rtm.index_launch(empty_wide, degree, *wide_args, s)

        wide_tasks = wide_per_step * degree + len(grads)
        cpus = rtm.machine.processors(rt.ProcKind.CPU)
        step_tasks = len(weights[:4]) * degree + len(grads[:4])

        def step_shape(s):
            for w in weights[:4]:
                rtm.index_launch(empty_forward, P.color_shape, P, parts[0], w, s, rt.POINT)
            for w, g in zip(weights[:4], grads[:4], strict=True):
                rtm.launch(empty_update, w, g, 0.1, tag=(cpus[0],))  # a new tuple each step, as fit does

        def wide():
            for s in range(max(1, n // (wide_tasks * 4))):
                wide_step(s)

        def traced(body, count, wait=True):
            def run():
                for s in range(count):
                    with rtm.trace(body.__name__, wait=wait):
                        body(s)
            return run

        def t_single_ro(s):
            for _ in range(per_trace):
                rtm.launch(empty_ro, W)

        def t_single_rw(s):
            for _ in range(per_trace):
                rtm.launch(empty_rw, W)

        def t_index(s):
            for _ in range(per_trace // degree):
                rtm.index_launch(empty_point, P.color_shape, P, W, s)

        cases = [
            ("single, independent (RO)", single_ro, n),
            ("single, chain (RW)", single_rw, n),
            (f"index D={degree}, per point", index, (n // degree) * degree),
        ]
        cases.append((f"wide index D={degree} (20 region args), per point", wide,
                      max(1, n // (wide_tasks * 4)) * wide_tasks))
        for label, fn, count in cases:
            rows.append((f"{label}, untraced", _best(_timed(rtm, fn, count) for _ in range(repeats))))
        traces = max(1, n // per_trace)
        for label, body, per in [("single, independent (RO)", t_single_ro, per_trace),
                                 ("single, chain (RW)", t_single_rw, per_trace),
                                 (f"index D={degree}, per point", t_index, (per_trace // degree) * degree),
                                 (f"wide index D={degree} (20 region args), per point", wide_step, wide_tasks),
                                 (f"step-shaped trace D={degree} ({step_tasks} tasks), per task", step_shape,
                                  step_tasks)]:
            with rtm.trace(body.__name__):  # record once
                body(0)
            count = traces if body is t_single_ro or body is t_single_rw or body is t_index \
                else max(1, n // (per * 4))
            rows.append((f"{label}, traced",
                         _best(_timed(rtm, traced(body, count), count * per) for _ in range(repeats))))
            if body is not t_single_ro and body is not t_single_rw:
                rows.append((f"{label}, traced, wait=False",
                             _best(_timed(rtm, traced(body, count, wait=False), count * per)
                                   for _ in range(repeats))))
        stats = rtm.stats
        assert stats.replayed_points > 0 and stats.trace_mismatches == 0
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=4000)
    ap.add_argument("--degree", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--executor", choices=["threaded", "sequential", "both"], default="both")
    ap.add_argument("--no-help", action="store_true",
                    help="add a threaded column whose waiting thread only blocks (FF_HOST_HELPS=0: the workers "
                         "run every point, as before waiting threads ran ready points)")
    ap.add_argument("--interpreted-too", action="store_true",
                    help="then run the same table with FF_INTERPRETED=1 in a fresh process")
    args = ap.parse_args(argv)
    executors = ["threaded", "sequential"] if args.executor == "both" else [args.executor]
    results = {ex: bench(ex, args.tasks, args.degree, args.repeats) for ex in executors}
    if args.no_help and "threaded" in executors:
        before = os.environ.get("FF_HOST_HELPS")
        os.environ["FF_HOST_HELPS"] = "0"  # read when the executor starts (runtime/workers.py)
        try:
            results["no help"] = bench("threaded", args.tasks, args.degree, args.repeats)
        finally:
            if before is None:
                del os.environ["FF_HOST_HELPS"]
            else:
                os.environ["FF_HOST_HELPS"] = before
        executors = [*executors, "no help"]
    labels = [label for label, _ in results[executors[0]]]
    head = f"{'case':<66}" + "".join(f"{ex + ' us/task wall / CPU':>32}" for ex in executors)
    print(head)
    print("-" * len(head))
    for i, label in enumerate(labels):
        print(f"{label:<66}" + "".join(f"{results[ex][i][1][0]:>24.1f} / {results[ex][i][1][1]:>5.1f}"
                                       for ex in executors))
    from runtime import _compiled

    mode = ("compiled (Cython)" if _compiled.all_compiled() else
            "interpreted (" + ("FF_INTERPRETED=1" if os.environ.get("FF_INTERPRETED", "") not in ("", "0")
                               else "not built or stale: python -m pip install -e .") + ")")
    print(f"\n{args.tasks} tasks per row, best of {args.repeats}; machine: 2 CPU + 1 UTIL processors, "
          f"{os.cpu_count()} cores; runtime modules {mode}")
    if args.interpreted_too:
        print("\nThe same, with the runtime's .py sources interpreted (FF_INTERPRETED=1):\n", flush=True)
        rest = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--interpreted-too"]
        subprocess.run([sys.executable, __file__, *rest], env=dict(os.environ, FF_INTERPRETED="1"), check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
