"""The strategy search: measured wins on this machine, simulator fidelity, and simulated wins on the
shipped machine models.

    python benchmarks/search.py --measured [--cpus 2 4] [--models ...] [--rounds 3] [--steps 20]
    python benchmarks/search.py --simulated [--graphs ...] [--machines ...]

--measured: for each model and `-ll:cpu` count, the search runs as `fit` would run it (this machine's
processors, measured kernel costs); then every strategy it compared (data parallelism at each degree,
the expert strategies, what the search found) is trained and timed in steady state (`_timing.py`),
interleaved round by round. The table gives predicted and measured ms/step (median and range over
rounds); the summary gives the searched strategy against the best data-parallel degree, both measured,
and the simulator's fidelity over all strategies: median relative error and Spearman rank correlation.

--simulated: on the shipped machine models (and scaled ones), the predicted speedup of the searched
strategy over the best data parallelism and the search time, for AlexNet, a ResNet-50-like CNN, an
Inception-like stack, a transformer encoder, the DLRM-like model and the wide MLP; and the search time
for 100-op and 1,000-op graphs.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

os.environ.setdefault("FF_LOG_LEVEL", "WARNING")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _models import MODELS  # noqa: E402
from _timing import fit_seconds, head, step_ms  # noqa: E402

BATCH = {"mnist_mlp": 64, "mnist_cnn": 64, "wide_mlp": 64, "dlrm": 128}


def spearman(a, b) -> float:
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        for pos, i in enumerate(order):
            r[i] = float(pos)
        return r

    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    sa = sum((x - ma) ** 2 for x in ra) ** 0.5
    sb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (sa * sb) if sa and sb else 0.0


def e_sources(model, x, y):
    """The sources tuple fit hands the engine (inputs, labels, sample weights)."""
    graph, xs, ys, sw, n = model._prepare(x, y, None)
    return model._sources(xs, ys, sw, n)


def measured(args) -> None:
    import flexflow_keras as ff
    from flexflow_keras.execution.choice import machine_model
    from flexflow_keras.execution.measured import search_and_check
    from flexflow_keras.search.driver import Problem

    pairs = []
    wins = []
    print(f"{'model':10} {'cpu':>3}  {'strategy':56} {'pred ms':>8} {'meas ms':>8} {'range':>15} {'err':>6}")
    for name in args.models:
        for cpus in args.cpus:
            batch = BATCH[name]
            ff.config.reset()
            ff.config.set(cpus=cpus, only_data_parallel=True, data_parallel_degree=1)
            model, x, y, loss = MODELS[name](ff, batch, 2 * args.steps)
            model.compile(optimizer=ff.optimizers.SGD(0.01), loss=loss)
            model.fit(head(x, batch), y[:batch], batch_size=batch, verbose=0)
            e = model._engine
            tg = e.tgraph
            problem = Problem(tg.graph, frozenset(t.uid for t in tg.per_sample_losses if t is not None),
                              frozenset(e.trainable_uids), batch, e.optimizer, 0)
            ff.config.reset()
            ff.config.set(cpus=cpus)
            t0 = time.perf_counter()
            import numpy as np

            machine = machine_model(e)
            srcs = e_sources(model, x, y)
            result = search_and_check(e, problem, machine, srcs, np.arange(batch, dtype=np.int64), 0,
                                      budget=args.budget)
            search_s = time.perf_counter() - t0
            rows = list(result.rows)
            times = {id(r): [] for r in rows}
            for _ in range(args.rounds):
                for r in rows:
                    model.compile(optimizer=ff.optimizers.SGD(0.01), loss=loss, strategy=r.strategy)
                    fit_seconds(model, head(x, 10 * batch), y[:10 * batch], batch)
                    times[id(r)].append(step_ms(model, x, y, batch, args.steps))
            for r in sorted(rows, key=lambda r: r.step_time):
                ts = times[id(r)]
                med = statistics.median(ts)
                pred = r.step_time * 1e3
                err = (pred - med) / med
                anchor = r.label in ("data parallel x1", f"data parallel x{cpus}")
                if not anchor:  # the anchors calibrate the simulator: only the others are predictions
                    pairs.append((pred, med))
                mark = (" *" if r.strategy == result.strategy else "") + (" (anchor)" if anchor else "")
                print(f"{name:10} {cpus:3d}  {r.label[:56]:56} {pred:8.2f} {med:8.2f} {min(ts):7.2f}-{max(ts):<7.2f}"
                      f" {err:+6.0%}{mark}", flush=True)
            dp = min((statistics.median(times[id(r)]), r.label) for r in rows if r.label.startswith("data parallel"))
            chosen = next(r for r in rows if r.strategy == result.strategy)  # what fit would train with
            got = statistics.median(times[id(chosen)])
            wins.append((name, cpus, dp[1], dp[0], chosen.label, got, dp[0] / got, search_s))
            # free this model's regions before the next one (the runtime's records form reference cycles,
            # which Python's collector, counting objects rather than bytes, would keep for a long time)
            model._engine.detach()
            del model, e, srcs, result, x, y
            gc.collect()
    print()
    print(f"{'model':10} {'cpu':>3}  {'best data parallel (measured)':34} {'searched (measured)':46} {'speedup':>7}"
          f" {'search s':>8}")
    for name, cpus, dpl, dpt, sl, st, sp, ss in wins:
        print(f"{name:10} {cpus:3d}  {dpl:20} {dpt:9.2f} ms   {sl[:32]:32} {st:9.2f} ms {sp:6.2f}x {ss:8.1f}")
    errs = [abs(p - m) / m for p, m in pairs]
    print("* the strategy fit trains with; (anchor): measured to calibrate the simulator, not counted below")
    print(f"\nsimulator fidelity over {len(pairs)} strategies: median relative error {statistics.median(errs):.1%}, "
          f"Spearman rank correlation {spearman([p for p, _ in pairs], [m for _, m in pairs]):.2f}")


def simulated(args) -> None:
    import _graphs

    import flexflow_keras as ff
    from flexflow_keras.search.driver import Problem, search
    from flexflow_keras.search.machine import MachineModel

    cases = [(g, m) for g in args.graphs for m in args.machines]
    print(f"{'graph':12} {'ops':>5} {'machine (devices)':24} {'batch':>5} {'dp best':>10} {'searched':>10} "
          f"{'speedup':>7} {'search s':>8}")
    for gname, mname in cases:
        ff.backend.clear_session()
        builder = _graphs.GRAPHS[gname]
        model, label_shape, label_dtype, loss = builder(ff)
        graph, seeds, trainable = _graphs.training_graph(model, label_shape, label_dtype, loss)
        machine = MachineModel.from_file(mname.split("@")[0])
        if "@" in mname:
            nodes = int(mname.split("@")[1])
            machine = machine.scaled(nodes)
        batch = args.batch or max(64, 8 * machine.n)
        problem = Problem(graph, frozenset(seeds), frozenset(trainable), batch, ff.optimizers.SGD(0.01), 0)
        t0 = time.perf_counter()
        r = search(problem, machine, budget=args.budget)
        dt = time.perf_counter() - t0
        sp = r.best_dp.step_time / r.step_time
        label = f"{mname} ({machine.n})"
        print(f"{gname:12} {len(graph.nodes):5d} {label:24} {batch:5d} {r.best_dp.step_time * 1e3:8.2f}ms "
              f"{r.step_time * 1e3:8.2f}ms {sp:6.2f}x {dt:8.1f}", flush=True)


def search_times(args) -> None:
    """Search time and simulations per second for graphs of about 100 and 1,000 ops."""
    import _graphs

    import flexflow_keras as ff
    from flexflow_keras.search.driver import Problem, search
    from flexflow_keras.search.machine import MachineModel

    print(f"\n{'graph':20} {'ops':>5} {'machine':30} {'search s':>9} {'simulations':>11} {'sims/s':>8}")
    for n_ops in args.sizes:
        ff.backend.clear_session()
        model, label_shape, label_dtype, loss = _graphs.big_graph(ff, n_ops)
        graph, seeds, trainable = _graphs.training_graph(model, label_shape, label_dtype, loss)
        machine = MachineModel.from_file(args.time_machine)
        problem = Problem(graph, frozenset(seeds), frozenset(trainable), 64, ff.optimizers.SGD(0.01), 0)
        t0 = time.perf_counter()
        r = search(problem, machine, budget=args.budget)
        dt = time.perf_counter() - t0
        print(f"{'big_graph':20} {len(graph.nodes):5d} {machine.name[:30]:30} {dt:9.1f} {r.evaluations:11d} "
              f"{r.evaluations / dt:8.0f}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser()
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--measured", action="store_true")
    mode.add_argument("--simulated", action="store_true")
    ap.add_argument("--cpus", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--graphs", nargs="+", default=["alexnet", "resnet50", "inception", "transformer", "dlrm",
                                                    "wide_mlp"])
    ap.add_argument("--machines", nargs="+", default=["dgx1_v100", "hgx_h200", "pcie_2x4", "dgx1_v100@2",
                                                      "hgx_h200_x4_ib"])
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--sizes", type=int, nargs="*", default=[100, 1000], help="op counts for the search-time table")
    ap.add_argument("--time-machine", default="hgx_h200")
    args = ap.parse_args(argv)
    if args.measured:
        measured(args)
    else:
        simulated(args)
        search_times(args)


if __name__ == "__main__":
    main()
