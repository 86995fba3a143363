"""Training steps per second of `fit` with the step overlap on and off (execution/overlap.py), one process.

    python benchmarks/step_overlap.py [--rounds 5] [--steps 300] [--batch 64] [--verbose 0] [--degree 1]
                                      [--blas-threads N]

The MNIST-shaped MLP (784-512-512-10, Adam, `metrics=["accuracy"]`, synthetic data) is warmed up with one
fit (the strategy is chosen, the traces recorded), then timed fits alternate overlap on
(``FF_STEP_OVERLAP=1``) and off (``0``). Prints each round's steps/s and, per mode, the median, min and
max, and the median and range of the on/off ratio within a round: the machine may be shared, so read
the spread, not one number.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

os.environ.setdefault("FF_LOG_LEVEL", "WARNING")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300, help="steps per timed fit")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--verbose", type=int, default=0, help="fit(verbose=...) of the timed fits")
    ap.add_argument("--degree", type=int, default=1,
                    help="data-parallel degree (fixed, so that a strategy search under load does not differ "
                         "between runs; 0: let fit choose)")
    ap.add_argument("--blas-threads", type=int, default=0,
                    help="cap BLAS threads after the warm-up fit (threadpoolctl; 0: the runtime's policy)")
    args, _ = ap.parse_known_args(argv)

    import flexflow_keras as keras

    if args.degree:
        keras.config.set(data_parallel_degree=args.degree)

    k = keras
    model = k.Sequential([k.Input(shape=(784,)), k.layers.Dense(512, activation="relu"),
                          k.layers.Dense(512, activation="relu"), k.layers.Dense(10, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    rng = np.random.default_rng(0)
    n = args.steps * args.batch
    x = rng.random((n, 784), dtype=np.float32)
    y = rng.integers(0, 10, n).astype(np.int32)
    model.fit(x[: 20 * args.batch], y[: 20 * args.batch], batch_size=args.batch, epochs=1, verbose=0)
    if args.blas_threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.blas_threads, user_api="blas")
    rates: dict[str, list[float]] = {"on": [], "off": []}
    ratios: list[float] = []
    for r in range(args.rounds):
        for mode in (("on", "off") if r % 2 == 0 else ("off", "on")):
            os.environ["FF_STEP_OVERLAP"] = "1" if mode == "on" else "0"
            t0 = time.perf_counter()
            model.fit(x, y, batch_size=args.batch, epochs=1, verbose=args.verbose, shuffle=False)
            rate = args.steps / (time.perf_counter() - t0)
            rates[mode].append(rate)
            print(f"round {r + 1} overlap {mode:>3}: {rate:8.1f} steps/s", flush=True)
        ratios.append(rates["on"][-1] / rates["off"][-1])
    for mode, vals in rates.items():
        print(f"overlap {mode:>3}: median {statistics.median(vals):8.1f} steps/s, min {min(vals):8.1f}, "
              f"max {max(vals):8.1f} ({len(vals)} fits of {args.steps} steps, batch {args.batch})")
    print(f"on/off in the same round: median {statistics.median(ratios):.2f}, min {min(ratios):.2f}, "
          f"max {max(ratios):.2f}")


if __name__ == "__main__":
    main()
