"""Peak memory of `fit` against tf.keras: a transformer's training step, as a user runs it.

    python benchmarks/memory.py [--batches 64,256] [--blocks 6] [--only ours|tf]

Each row trains the same model in a fresh process per framework: a ViT-like encoder of `--blocks` blocks
(layer norm, 4-head self-attention over 64 tokens of 128 features, a residual add, a GELU MLP of twice the
width, another add), average-pooled into a 10-class softmax, Adam, `metrics=["accuracy"]`, two epochs of
8 batches. It prints each framework's peak resident memory (the process's `ru_maxrss`), its growth over the
memory held just before `fit` (the framework and the model built), and the ratio of the growths. Target
(issue 8): ours no more than tf.keras's. Our process also reports its activation store (every buffer of
the step, those that share a region counted once: execution/buffer_reuse.py) and how many regions its
activations, saved buffers and gradients use. Memory does not depend on the machine's load; the figures
move by a few MB between runs with the allocator.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TOKENS, WIDTH, HEADS = 64, 128, 4


def worker(framework: str, batch: int, blocks: int) -> None:
    """One fit in this process; prints one JSON line."""
    if framework == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import keras
    else:
        sys.path.insert(0, str(ROOT))
        import flexflow_keras as keras
    layers = keras.layers
    keras.utils.set_random_seed(0)
    i = keras.Input((TOKENS, WIDTH))
    h = i
    for _ in range(blocks):
        a = layers.LayerNormalization()(h)
        a = layers.MultiHeadAttention(num_heads=HEADS, key_dim=WIDTH // HEADS)(a, a)
        h = layers.Add()([h, a])
        m = layers.LayerNormalization()(h)
        m = layers.Dense(2 * WIDTH, activation="gelu")(m)
        h = layers.Add()([h, layers.Dense(WIDTH)(m)])
    out = layers.Dense(10, activation="softmax")(layers.GlobalAveragePooling1D()(h))
    model = keras.Model(i, out)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    rng = np.random.default_rng(0)
    x = rng.random((batch * 8, TOKENS, WIDTH), dtype=np.float32)
    y = rng.integers(0, 10, batch * 8)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    model.fit(x, y, batch_size=batch, epochs=2, verbose=0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    got = {"peak": peak, "growth": peak - before}
    if framework == "ours":
        store = model._engine._stores[batch]
        regions = {r.uid for r in [*store.acts.values(), *store.grads.values(),
                                   *(r for g in store.saved.values() for r in g)]}
        buffers = len(store.acts) + len(store.grads) + sum(len(g) for g in store.saved.values())
        got.update(store_mb=store.nbytes() / 2**20, regions=len(regions), buffers=buffers)
    print(json.dumps(got), flush=True)


def run(framework: str, batch: int, blocks: int) -> dict:
    env = dict(os.environ, FF_LOG_LEVEL="WARNING", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, __file__, "--worker", framework, str(batch), str(blocks)],
                          capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"the {framework} run at batch {batch} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="64,256")
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--only", choices=["ours", "tf"], default=None)
    args = ap.parse_args()
    rows = []
    for batch in (int(b) for b in args.batches.split(",")):
        ours = run("ours", batch, args.blocks) if args.only != "tf" else None
        theirs = run("tf", batch, args.blocks) if args.only != "ours" else None
        rows.append((batch, ours, theirs))
    print(f"\n{args.blocks}-block transformer, {TOKENS} tokens x {WIDTH}, Adam; peak RSS MB (growth during fit)")
    print(f"{'batch':>5}  {'flexflow_keras':>22}  {'tf.keras':>18}  {'growth ratio':>12}  target  our store")
    for batch, ours, theirs in rows:
        o = f"{ours['peak']:.0f} ({ours['growth']:.0f})" if ours else "-"
        t = f"{theirs['peak']:.0f} ({theirs['growth']:.0f})" if theirs else "-"
        ratio = ours["growth"] / theirs["growth"] if ours and theirs else None
        verdict = "" if ratio is None else ("ok" if ratio <= 1.0 else "ABOVE")
        store = (f"{ours['store_mb']:.0f} MB, {ours['buffers']} buffers in {ours['regions']} regions"
                 if ours else "")
        print(f"{batch:>5}  {o:>22}  {t:>18}  {'' if ratio is None else f'{ratio:.2f}x':>12}  {verdict:6}  {store}")


if __name__ == "__main__":
    main()
