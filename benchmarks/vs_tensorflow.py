"""flexflow_keras vs tf.keras on the MNIST-shaped MLP and CNN and the imdb_lstm LSTM, Adam, synthetic data,
one process.

    python benchmarks/vs_tensorflow.py [--rounds 3] [--steps 150]

Each case builds the same architecture in both frameworks, warms each up with one fit, then alternates
timed fits (ours, theirs, ours, theirs, ...) and reports the best steady-state samples/s of each and the
ratio. Targets from the issues: MLP b64 >= 1.8x, MLP b128 >= 1.4x, CNN b64 >= 1.5x, imdb_lstm (Embedding
20000x128, LSTM 128 over 80 steps, Dense 1 sigmoid, batch 32) >= 1.0x.
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


def imdb_lstm(k):
    L = k.layers
    return k.Sequential([k.Input(shape=(80,), dtype="int32"), L.Embedding(20000, 128), L.LSTM(128),
                         L.Dense(1, activation="sigmoid")])


CASES = [("MLP 784-512-512-10", mlp, (784,), 64, 1.8), ("MLP 784-512-512-10", mlp, (784,), 128, 1.4),
         ("CNN conv32-conv64-pool-128-10", cnn, (28, 28, 1), 64, 1.5),
         ("imdb_lstm emb-LSTM128x80-1", imdb_lstm, (80,), 32, 1.0)]


def timed_fit(model, x, y, batch):
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
    return len(x) / (time.perf_counter() - t0)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=150, help="steps per timed fit (CNN: a fifth of it)")
    ap.add_argument("--only", choices=["mlp", "cnn", "imdb"], default=None)
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
        if build is imdb_lstm:  # word ids and binary labels
            x = rng.integers(0, 20000, (steps * batch,) + shape).astype(np.int32)
            y, loss = rng.integers(0, 2, steps * batch).astype(np.float32), "binary_crossentropy"
        else:
            x = rng.random((steps * batch,) + shape, dtype=np.float32)
            y, loss = rng.integers(0, 10, steps * batch).astype(np.int32), "sparse_categorical_crossentropy"
        models = {}
        for label, k in (("flexflow_keras", ff), ("tf.keras", tf.keras)):
            m = build(k)
            m.compile(optimizer=k.optimizers.Adam(1e-3), loss=loss)
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
