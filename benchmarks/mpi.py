"""MPI between nodes: 1 rank with 2 processors against 2 ranks with 1 each, and our gradient reduction
against mpi4py's own Allreduce.

    python benchmarks/mpi.py [--samples 4096] [--batch 64] [--epochs 1] [--sizes-mb 1,8,32] [--repeat 20]

1. Trains the MNIST MLP (784-512-512-10, Adam, `metrics=["accuracy"]`, synthetic MNIST-shaped data) as one process with
   `-ll:cpu 2 --data-parallel-degree 2`, then under `mpiexec -n 2` with `-ll:cpu 1` per rank, and prints
   samples/s and the final loss of each.
2. Under `mpiexec -n 2`: for each buffer size, the median seconds of mpi4py's `Allreduce(IN_PLACE)` on
   a float32 NumPy buffer, and of our reduction of a runtime region of the same bytes (runtime/comm.py's
   start and finish tasks launched on the runtime as a training step launches them, until the sum is
   in the region), interleaved, and the ratio of their bandwidths (target: ours >= 80% of mpi4py's); and,
   for reference, the same Reducer called directly on the main thread (the MPI part alone).
   Three cases: one reduction the host waits for alone, its three launches untraced (the figure includes
   issuing them right after the barrier, 40-55 us here; the waiting host then runs the tasks itself, see
   runtime/workers.py) and traced (recorded once, then replayed, as `fit` issues its steps); and a
   step's worth: 8 regions of that size reduced as a training step issues them (every start task, then
   every finish, the host waiting once at the end) against 8 consecutive Allreduce calls.

3. With `--in-flight`: what `runtime/sum_queue.py`'s budget of bytes in flight rests on: 8 sums of each
   size as blocking Allreduce calls, then as Iallreduce calls with at most 1, 2, 4 or 8 in flight.

Timings on a shared machine are noisy: compare runs made together, and repeat.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("FF_LOG_LEVEL", "WARNING")
    return env


def train_worker(args) -> None:
    """One training run (every rank runs it); rank 0 prints one JSON line."""
    import flexflow_keras as keras
    from flexflow_keras import layers
    from flexflow_keras.execution import distributed

    keras.utils.set_random_seed(0)
    rs = np.random.RandomState(0)
    x = rs.rand(args.samples, 784).astype("float32")
    y = rs.randint(0, 10, args.samples)
    model = keras.Sequential([keras.Input(shape=(784,)), layers.Dense(512, activation="relu"),
                              layers.Dense(512, activation="relu"), layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])  # as scripts do
    model.fit(x[:args.batch * 4], y[:args.batch * 4], batch_size=args.batch, epochs=1, verbose=0)  # warm up
    hist = model.fit(x, y, batch_size=args.batch, epochs=args.epochs, verbose=0)
    stats = model._last_fit_stats
    w = distributed.world()
    if w is None or w.rank == 0:
        print(json.dumps({"samples_per_second": stats["samples_per_second"], "seconds": stats["seconds"],
                          "loss": hist.history["loss"][-1]}), flush=True)


def reduce_worker(args) -> None:
    """Our reduction against mpi4py's Allreduce of the same bytes (run under mpiexec -n 2)."""
    import runtime as rt
    from runtime import comm

    w = comm.start(sys.argv[1:])
    if w is None:
        raise SystemExit("benchmarks/mpi.py --reduce-worker must run under mpiexec -n 2 or more")
    MPI = w.MPI
    rows = []
    fence = rt.Task(lambda buf: None, [rt.RO], name="fence")
    with rt.Runtime(rt.Machine(cpus=1)) as rtm:
        for mb in [float(s) for s in args.sizes_mb.split(",")]:
            n = int(mb * (1 << 20)) // 4
            buf = np.ones(n, np.float32)
            region = rt.Region((n,), np.float32, name=f"grad{mb}")
            rtm.fill(region, 1.0)
            red = comm.Reducer(w, f"grad{mb}")
            start, finish = comm.sum_tasks(red)
            t_mpi, t_ours, t_direct, t_traced = [], [], [], []
            for k in range(args.repeat + 2):  # interleaved, so both see the same machine load; 2 warm-ups
                w.barrier()
                t0 = time.perf_counter()
                w.comm.Allreduce(MPI.IN_PLACE, buf)
                t1 = time.perf_counter()
                w.barrier()
                t2 = time.perf_counter()
                rtm.launch(start, region)
                rtm.launch(finish, region)
                rtm.launch(fence, region).get()  # the sum is complete and in the region
                t3 = time.perf_counter()
                w.barrier()
                t4 = time.perf_counter()
                red.start(buf)  # the same reduction called on this thread, without the runtime's tasks
                red.finish(buf)
                t5 = time.perf_counter()
                w.barrier()
                t6 = time.perf_counter()
                with rtm.trace(f"one{mb}"):  # as a training step issues it: recorded once, then replayed
                    rtm.launch(start, region)
                    rtm.launch(finish, region)
                    rtm.launch(fence, region)
                t7 = time.perf_counter()
                if k >= 2:
                    t_mpi.append(t1 - t0)
                    t_ours.append(t3 - t2)
                    t_direct.append(t5 - t4)
                    t_traced.append(t7 - t6)
            t_mpi, t_ours = float(np.median(t_mpi)), float(np.median(t_ours))
            t_direct = max(w.gather(float(np.median(t_direct))))
            t_traced = float(np.median(t_traced))
            rows.append({"mb": mb, "mpi4py_s": t_mpi, "ours_s": t_ours, "mpi4py_GBps": mb * 2**20 / t_mpi / 1e9,
                         "ours_GBps": mb * 2**20 / t_ours / 1e9, "ratio": t_mpi / t_ours,
                         "direct_GBps": mb * 2**20 / t_direct / 1e9,
                         "traced_ratio": t_mpi / t_traced, **_step_case(w, rtm, mb, n, args.repeat, fence)})
    if w.rank == 0:
        print(json.dumps({"links": [[lk.peer, lk.bandwidth, lk.latency] for lk in w.links], "rows": rows}),
              flush=True)


def _step_case(w, rtm, mb: float, n: int, repeat: int, fence, k: int = 8) -> dict:
    """K regions of `n` float32 reduced as a training step issues them, against K Allreduce calls."""
    import runtime as rt
    from runtime import comm

    MPI = w.MPI
    bufs = [np.ones(n, np.float32) for _ in range(k)]
    regions = [rt.Region((n,), np.float32, name=f"step{mb}.{i}") for i in range(k)]
    tasks = [comm.sum_tasks(comm.Reducer(w, f"step{mb}.{i}")) for i in range(k)]
    for r in regions:
        rtm.fill(r, 1.0)
    t_mpi, t_ours = [], []
    for j in range(repeat + 2):
        w.barrier()
        t0 = time.perf_counter()
        for b in bufs:
            w.comm.Allreduce(MPI.IN_PLACE, b)
        t1 = time.perf_counter()
        w.barrier()
        t2 = time.perf_counter()
        for (start, _), r in zip(tasks, regions, strict=True):
            rtm.launch(start, r)
        for (_, finish), r in zip(tasks, regions, strict=True):
            rtm.launch(finish, r)
        last = [rtm.launch(fence, r) for r in regions]
        for f in last:
            f.get()
        t3 = time.perf_counter()
        if j >= 2:
            t_mpi.append(t1 - t0)
            t_ours.append(t3 - t2)
    t_mpi, t_ours = float(np.median(t_mpi)), float(np.median(t_ours))
    return {"step_mpi4py_GBps": k * mb * 2**20 / t_mpi / 1e9, "step_ours_GBps": k * mb * 2**20 / t_ours / 1e9,
            "step_ratio": t_mpi / t_ours}


def in_flight_worker(args) -> None:
    """8 sums of each size: blocking, then at most 1, 2, 4 or 8 Iallreduce in flight (mpi4py alone)."""
    from mpi4py import MPI

    c = MPI.COMM_WORLD
    comms = [c.Dup() for _ in range(8)]
    limits = (1, 2, 4, 8)
    table = []
    for kb in (16, 64, 256, 1024, 4096):
        bufs = [np.ones(kb * 256, np.float32) for _ in range(8)]
        times: dict = {}
        for j in range(args.repeat + 2):
            for lim in (0, *limits):  # 0: blocking
                c.Barrier()
                t0 = time.perf_counter()
                if lim == 0:
                    for cc, b in zip(comms, bufs, strict=True):
                        cc.Allreduce(MPI.IN_PLACE, b)
                else:
                    pending, i = [], 0
                    while i < 8 or pending:
                        while i < 8 and len(pending) < lim:
                            pending.append(comms[i].Iallreduce(MPI.IN_PLACE, bufs[i]))
                            i += 1
                        pending = [r for r in pending if not r.Test()]
                if j >= 2:
                    times.setdefault(lim, []).append(time.perf_counter() - t0)
        table.append([kb] + [float(np.median(times[lim])) for lim in (0, *limits)])
    if c.rank == 0:
        print(json.dumps({"limits": limits, "rows": table}), flush=True)


def _last_json(out: str) -> dict:
    for line in reversed(out.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no result line in the output:\n{out[-2000:]}")


def _call(cmd) -> dict:
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return _last_json(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--sizes-mb", default="1,8,32")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--in-flight", action="store_true", help="also time 8 sums with 1, 2, 4 or 8 in flight")
    ap.add_argument("--train-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--in-flight-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--reduce-worker", action="store_true", help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args()
    if args.train_worker:
        return train_worker(args)
    if args.reduce_worker:
        return reduce_worker(args)
    if args.in_flight_worker:
        return in_flight_worker(args)
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        raise SystemExit("mpiexec not found: pip install -e '.[mpi]' (mpi4py and mpich)")
    me = [sys.executable, str(Path(__file__).resolve())]
    common = ["--samples", str(args.samples), "--batch", str(args.batch), "--epochs", str(args.epochs), "--seed", "1"]
    one = _call(me + ["--train-worker", *common, "-ll:cpu", "2", "--data-parallel-degree", "2"])
    two = _call([mpiexec, "-n", "2", *me, "--train-worker", *common, "-ll:cpu", "1"])
    print(f"MNIST MLP, {args.samples} samples x {args.epochs} epoch(s), -b {args.batch} (noisy: shared machine)")
    print(f"  1 rank  x 2 processors: {one['samples_per_second']:9.0f} samples/s   final loss {one['loss']:.6f}")
    print(f"  2 ranks x 1 processor : {two['samples_per_second']:9.0f} samples/s   final loss {two['loss']:.6f}")
    red = _call([mpiexec, "-n", "2", *me, "--reduce-worker", "--sizes-mb", args.sizes_mb,
                 "--repeat", str(args.repeat)])
    for peer, bw, lat in red["links"]:
        print(f"measured link 0<->{peer}: {bw / 1e9:.2f} GB/s, {lat * 1e6:.1f} us")
    print("gradient sum over 2 ranks (float32), GB/s:")
    print(f"{'':10}{'one reduction, the host waits':^45}|{'8 in a step, the host waits once':^30}")
    print(f"{'size':>8}  {'mpi4py':>8} {'ours':>8} {'ratio':>7} {'traced':>7} {'direct':>8}   |{'mpi4py':>9} "
          f"{'ours':>8} {'ratio':>7}")
    for r in red["rows"]:
        print(f"{r['mb']:5g} MB  {r['mpi4py_GBps']:8.2f} {r['ours_GBps']:8.2f} {100 * r['ratio']:6.0f}% "
              f"{100 * r['traced_ratio']:6.0f}% {r['direct_GBps']:8.2f}   |{r['step_mpi4py_GBps']:9.2f} "
              f"{r['step_ours_GBps']:8.2f} {100 * r['step_ratio']:6.0f}%")
    print("(ratio: ours untraced / mpi4py; traced: the same three launches replayed from a trace; direct: our "
          "Reducer called on the main thread, without the runtime's tasks)")
    if args.in_flight:
        fl = _call([mpiexec, "-n", "2", *me, "--in-flight-worker", "--repeat", str(args.repeat)])
        print("8 sums over 2 ranks, microseconds for all 8 (mpi4py alone):")
        print(f"{'size':>8}  {'blocking':>8} " + " ".join(f"{f'{n} in flight':>12}" for n in fl["limits"]))
        for kb, *ts in fl["rows"]:
            print(f"{kb:5d} KB  " + " ".join(f"{t * 1e6:>{12 if i else 8}.0f}" for i, t in enumerate(ts)))


if __name__ == "__main__":
    main()
