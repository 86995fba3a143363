"""flexflow_keras vs tf.keras on one transformer block (Embedding + MultiHeadAttention + LayerNormalization +
Dense feed-forward), Adam, synthetic ids, one process.

    python benchmarks/transformer_block.py [--batch 32] [--steps 64] [--seq 64] [--dim 64] [--rounds 2]

Each framework builds the same model, is warmed up with one fit (ours: the strategy search and kernel
compilation), then timed fits alternate (ours, theirs, ...); the best steady-state samples/s of each and
the ratio are printed. A measurement, not a test: the numbers depend on the machine's load.
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


def build(k, seq: int, dim: int, vocab: int):
    L = k.layers
    inp = L.Input((seq,), dtype="int32")
    e = L.Embedding(vocab, dim)(inp)
    a = L.MultiHeadAttention(num_heads=4, key_dim=dim // 4)(e, e)
    h = L.LayerNormalization()(L.Add()([e, a]))
    f = L.Dense(dim)(L.Dense(2 * dim, activation="relu")(h))
    h = L.LayerNormalization()(L.Add()([h, f]))
    model = k.Model(inp, L.Dense(2, activation="softmax")(L.GlobalAveragePooling1D()(h)))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=64, help="training steps per timed fit")
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    sys.argv = sys.argv[:1]  # leave no flags for flexflow_keras' own command-line parsing
    import tensorflow as tf

    import flexflow_keras as ff

    vocab, n = 1000, args.batch * args.steps
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocab, (n, args.seq)).astype("int32")
    y = rng.integers(0, 2, n).astype("int32")
    models = {"flexflow_keras": build(ff, args.seq, args.dim, vocab), "tf.keras": build(tf.keras, args.seq,
                                                                                         args.dim, vocab)}
    best = dict.fromkeys(models, 0.0)
    for m in models.values():
        m.fit(ids[:args.batch * 4], y[:args.batch * 4], batch_size=args.batch, epochs=1, verbose=0)
    for _ in range(args.rounds):
        for name, m in models.items():
            t = time.perf_counter()
            m.fit(ids, y, batch_size=args.batch, epochs=1, verbose=0)
            best[name] = max(best[name], n / (time.perf_counter() - t))
    for name, v in best.items():
        print(f"{name:15s} {v:9.0f} samples/s")
    print(f"ratio (ours / tf.keras): {best['flexflow_keras'] / best['tf.keras']:.2f}x")


if __name__ == "__main__":
    main()
