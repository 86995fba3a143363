"""Step time of data parallelism and hand-written strategies, on this machine's CPU processors.

    python benchmarks/strategies.py [--cpus 2 4] [--models mnist_mlp mnist_cnn wide_mlp dlrm]
                                    [--rounds 3] [--steps 20] [--dp-only]

For each model and `-ll:cpu` count: data parallelism at degrees 1, 2 and the processor count, and the
expert strategies that apply (Dense layers split along output features, which on the CNN is
data-parallel convolutions with model-parallel Dense; convolutions split along the height;
column-then-row MLP blocks; embedding tables placed on separate processors). Each strategy is timed in
steady state after a warm-up fit of 10 steps (after every compile): the difference between a fit of 2k
steps and one of k, the fastest of 2 of each, where k >= `--steps` lasts at least 0.5 s (`_timing.py`);
`--rounds` timings per strategy, interleaved round by round so that a disturbance hits every strategy
alike; the table gives the median ms/step and the range over rounds, and each row's speed relative to
the best data-parallel row.

`--dp-only` measures data parallelism only, with the API the code before strategies had (for the
before/after comparison, run the same command in a checkout of the older commit).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys

os.environ.setdefault("FF_LOG_LEVEL", "WARNING")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _models import MODELS  # noqa: E402
from _timing import fit_seconds, head, step_ms  # noqa: E402

BATCH = {"mnist_mlp": 64, "mnist_cnn": 64, "wide_mlp": 64, "dlrm": 128}


def candidates(ff, graph, cpus):
    from flexflow_keras.ops.strategy import Strategy
    from flexflow_keras.search.experts import expert_strategies

    out = [(f"data parallel x{d}", Strategy.data_parallel(graph, d, cpus)) for d in sorted({1, 2, cpus})]
    return out + [(s.source.replace("expert: ", ""), s) for s in expert_strategies(graph, cpus)]


def run_model(ff, name, cpus, rounds, steps, dp_only):
    batch = BATCH[name]
    ff.config.set(cpus=cpus, data_parallel_degree=1)
    model, x, y, loss = MODELS[name](ff, batch, 2 * steps)
    if dp_only:  # only the configuration API, which the code before strategies had too
        cands = [(f"data parallel x{d}", {"data_parallel_degree": d}) for d in sorted({1, 2, cpus})]
    else:
        model.compile(optimizer=ff.optimizers.SGD(0.01), loss=loss)
        model.fit(head(x, batch), y[:batch], batch_size=batch, verbose=0)
        cands = [(label, {"strategy": s}) for label, s in candidates(ff, model._engine.tgraph.graph, cpus)]
    times = {label: [] for label, _ in cands}
    for _ in range(rounds):
        for label, how in cands:
            if "data_parallel_degree" in how:
                ff.config.set(data_parallel_degree=how["data_parallel_degree"])
                model.compile(optimizer=ff.optimizers.SGD(0.01), loss=loss)
            else:
                model.compile(optimizer=ff.optimizers.SGD(0.01), loss=loss, strategy=how["strategy"])
            fit_seconds(model, head(x, 10 * batch), y[:10 * batch], batch)  # warm-up: trace, placement, caches
            times[label].append(step_ms(model, x, y, batch, steps))
    model._engine.detach()  # free this model's regions before the next one (see benchmarks/search.py)
    del model, x, y
    gc.collect()
    return [(label, statistics.median(t), min(t), max(t)) for label, t in times.items()]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpus", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--dp-only", action="store_true")
    args = ap.parse_args(argv)
    import flexflow_keras as ff

    print(f"{'model':10} {'-ll:cpu':>7}  {'strategy':62} {'ms/step':>8} {'range':>15} {'vs best dp':>10}")
    for name in args.models:
        for cpus in args.cpus:
            rows = run_model(ff, name, cpus, args.rounds, args.steps, args.dp_only)
            best_dp = min(m for label, m, _, _ in rows if label.startswith("data parallel"))
            for label, med, lo, hi in rows:
                print(f"{name:10} {cpus:7d}  {label:62} {med:8.2f} {lo:7.2f}-{hi:<7.2f} {best_dp / med:9.2f}x",
                      flush=True)


if __name__ == "__main__":
    main()
