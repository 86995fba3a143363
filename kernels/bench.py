"""Per-kernel CPU timings on the MNIST MLP's shapes (784-512-512-10, batch 64): ``python -m kernels.bench``.

Prints microseconds per call (median of repeats) with 1 and 2 BLAS threads, and the sum over one training
step's kernels (forward, loss, backward; the optimizer is timed in kernels/optimizers' own benchmark).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from kernels import activations, linear, losses, softmax


def _time(fn, repeat: int) -> float:
    fn()
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        samples.append((time.perf_counter() - t0) / repeat)
    return float(np.median(samples)) * 1e6


def step_kernels(batch: int):
    """(name, callable) for every kernel call of one MLP training step, in order."""
    rng = np.random.default_rng(0)
    f32 = np.float32
    sizes = [784, 512, 512, 10]
    relu, lin = activations.resolve_activation("relu"), activations.resolve_activation("linear")
    xs = [rng.standard_normal((batch, sizes[0])).astype(f32)]
    ws = [(rng.standard_normal((a, b)) * 0.05).astype(f32) for a, b in zip(sizes, sizes[1:], strict=False)]
    bs = [np.zeros(b, f32) for b in sizes[1:]]
    ys = [np.empty((batch, b), f32) for b in sizes[1:]]
    acts = [relu, relu, lin]
    calls = []
    for i in range(3):
        x = xs[0] if i == 0 else ys[i - 1]
        calls.append((f"dense{i + 1} fwd {sizes[i]}x{sizes[i + 1]}",
                      lambda x=x, i=i: linear.linear_forward_cpu(x, ws[i], bs[i], ys[i], acts[i])))
    labels = np.eye(10, dtype=f32)[rng.integers(0, 10, batch)]
    loss, g, dlogits = np.empty(batch, f32), np.full(batch, 1.0 / batch, f32), np.empty((batch, 10), f32)
    probs = np.empty((batch, 10), f32)
    calls.append(("softmax fwd (metrics)", lambda: softmax.softmax_forward_cpu(ys[2], probs)))
    calls.append(("cce-logits fwd", lambda: losses.loss_forward_cpu(losses.CCE_LOGITS, labels, ys[2], loss)))
    calls.append(("cce-logits bwd", lambda: losses.loss_backward_cpu(losses.CCE_LOGITS, labels, ys[2], g, dlogits)))
    dws = [np.empty_like(w) for w in ws]
    dbs = [np.empty_like(b) for b in bs]
    dxs = [None, np.empty((batch, 512), f32), np.empty((batch, 512), f32)]
    dys = [dxs[1], dxs[2], dlogits]
    for i in (2, 1, 0):
        x = xs[0] if i == 0 else ys[i - 1]
        calls.append((f"dense{i + 1} bwd{' (no dx)' if dxs[i] is None else ''}",
                      lambda x=x, i=i: linear.linear_backward_cpu(x, ws[i], ys[i], dys[i], dxs[i], dws[i], dbs[i],
                                                                  acts[i])))
    return calls


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeat", type=int, default=200)
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    rows = {}
    for threads in (1, 2):
        with threadpool_limits(threads):
            for name, fn in step_kernels(args.batch):
                rows.setdefault(name, []).append(_time(fn, args.repeat))
    title = f"kernel (batch {args.batch})"
    out = [f"{title:34s} {'1 thread us':>12s} {'2 threads us':>13s}"]
    for name, (t1, t2) in rows.items():
        out.append(f"{name:34s} {t1:12.1f} {t2:13.1f}")
    tot1, tot2 = sum(v[0] for v in rows.values()), sum(v[1] for v in rows.values())
    out.append(f"{'step total (no optimizer)':34s} {tot1:12.1f} {tot2:13.1f}")
    out.append(f"{'=> samples/s bound':34s} {args.batch / tot1 * 1e6:12.0f} {args.batch / tot2 * 1e6:13.0f}")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
