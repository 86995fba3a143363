"""flexflow_keras vs tf.keras on the MNIST-shaped MLP and CNN, Adam, synthetic data, one process.

    python benchmarks/vs_tensorflow.py [--rounds 3] [--steps 150]

Each case builds the same architecture in both frameworks, warms each up with one fit, then alternates
timed fits (ours, theirs, ours, theirs, ...) and reports the best steady-state samples/s of each and the
ratio. Targets from the issue: MLP b64 >= 1.8x, MLP b128 >= 1.4x, CNN b64 >= 1.5x.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("FF_LOG_LEVEL", "WARNING")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def mlp(k):
    return k.Sequential([k.Input(shape=(784,)), k.layers.Dense(512, activation="relu"),
                         k.layers.Dense(512, activation="relu"), k.layers.Dense(10, activation="softmax")])


def cnn(k):
    L = k.layers
    return k.Sequential([k.Input(shape=(28, 28, 1)), L.Conv2D(32, 3, activation="relu"),
                         L.Conv2D(64, 3, activation="relu"), L.MaxPooling2D(2), L.Flatten(),
                         L.Dense(128, activation="relu"), L.Dense(10, activation="softmax")])


CASES = [("MLP 784-512-512-10", mlp, (784,), 64, 1.8), ("MLP 784-512-512-10", mlp, (784,), 128, 1.4),
         ("CNN conv32-conv64-pool-128-10", cnn, (28, 28, 1), 64, 1.5)]


def timed_fit(model, x, y, batch):
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
    return len(x) / (time.perf_counter() - t0)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=150, help="steps per timed fit (CNN: a fifth of it)")
    ap.add_argument("--only", choices=["mlp", "cnn"], default=None)
    args, _ = ap.parse_known_args(argv)

    import tensorflow as tf

    import flexflow_keras as ff

    tf.keras.utils.set_random_seed(0)
    rows = []
    for name, build, shape, batch, target in CASES:
        if args.only and not name.lower().startswith(args.only):
            continue
        steps = args.steps if name.startswith("MLP") else max(10, args.steps // 5)
        rng = np.random.default_rng(0)
        x = rng.random((steps * batch,) + shape, dtype=np.float32)
        y = rng.integers(0, 10, steps * batch).astype(np.int32)
        models = {}
        for label, k in (("flexflow_keras", ff), ("tf.keras", tf.keras)):
            m = build(k)
            m.compile(optimizer=k.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy")
            timed_fit(m, x[: 4 * batch], y[: 4 * batch], batch)  # warm-up: compile, trace, caches
            models[label] = m
        best = {label: 0.0 for label in models}
        for _ in range(args.rounds):
            for label, m in models.items():
                best[label] = max(best[label], timed_fit(m, x, y, batch))
        ratio = best["flexflow_keras"] / best["tf.keras"]
        rows.append((name, batch, best["flexflow_keras"], best["tf.keras"], ratio, target))
    print(f"{'model':32} {'batch':>5} {'flexflow_keras':>15} {'tf.keras':>10} {'ratio':>7} {'target':>7}")
    for name, batch, ours, theirs, ratio, target in rows:
        ok = "ok" if ratio >= target else "BELOW"
        print(f"{name:32} {batch:5d} {ours:13.0f}/s {theirs:8.0f}/s {ratio:6.2f}x {target:5.1f}x {ok}")


if __name__ == "__main__":
    main()
