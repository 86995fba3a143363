"""Conv / pool kernel timings for the MNIST CNN (Conv2D(32,3,relu) -> Conv2D(64,3,relu) -> MaxPool(2)),
batch 64: ours vs TensorFlow's CPU kernels, in ms per op (best of N runs).

Ours runs the way data-parallel training runs it on this 2-core machine: two 32-sample shards at once on
two threads with one BLAS thread each ("ours 2x32"); and as one 64-sample call with two BLAS threads
("ours 1x64"). TensorFlow runs its own ops at batch 64 on its default thread pools (one intra-op thread
per core). Backward rows are what each framework executes for the gradient: ReluGrad + BiasAddGrad +
Conv2DBackpropFilter (+ Conv2DBackpropInput) for TF; one fused conv2d_backward_cpu call for us.

    python benchmarks/conv_kernels.py [--repeats 30] [--no-tf] [--algorithms]

`--algorithms` also prints the single-threaded comparison behind `kernels.conv2d.choose_cpu_algorithm`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from threadpoolctl import threadpool_info, threadpool_limits  # noqa: E402

from kernels import conv2d as K  # noqa: E402
from kernels import pool2d as P  # noqa: E402

BATCH = 64
CONVS = {"conv1": (28, 1, 32), "conv2": (26, 32, 64)}  # input size, in channels, filters (3x3, valid)


def best_ms(fn, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


class Case:
    """Arrays and buffers of one layer for a batch of `n`."""

    def __init__(self, rng, name: str, n: int):
        h, c, co = CONVS[name]
        self.x = rng.standard_normal((n, h, h, c)).astype(np.float32)
        self.k = (rng.standard_normal((3, 3, c, co)) * 0.1).astype(np.float32)
        self.b = np.zeros(co, np.float32)
        self.y = np.empty((n, h - 2, h - 2, co), np.float32)
        K.conv2d_forward_cpu(self.x, self.k, self.b, self.y, activation="relu")
        self.gy = rng.standard_normal(self.y.shape).astype(np.float32)
        self.gx = np.empty_like(self.x)
        self.gk = np.empty_like(self.k)
        self.gb = np.empty_like(self.b)
        self.first = name == "conv1"  # the first layer needs no input gradient
        self.pool_out = self.argmax = self.pool_gx = None
        if name == "conv2":
            self.pool_out = np.empty((n, 12, 12, co), np.float32)
            self.argmax = np.empty(self.pool_out.shape, np.int32)
            self.pool_gy = rng.standard_normal(self.pool_out.shape).astype(np.float32)
            self.pool_gx = np.empty_like(self.y)

    def forward(self):
        K.conv2d_forward_cpu(self.x, self.k, self.b, self.y, activation="relu")

    def backward(self):
        K.conv2d_backward_cpu(self.x, self.k, self.y, self.gy, None if self.first else self.gx, self.gk, self.gb,
                              activation="relu")

    def pool_forward(self):
        P.pool2d_forward_cpu(self.y, self.pool_out, 2, None, "valid", "max", self.argmax)

    def pool_backward(self):
        P.pool2d_backward_cpu(self.y, self.pool_gy, self.pool_gx, 2, None, "valid", "max", self.argmax)


def ours(repeats: int) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(0)
    rows: dict[str, tuple[float, float]] = {}
    pool = ThreadPoolExecutor(2)
    for name in CONVS:
        shards = [Case(rng, name, BATCH // 2) for _ in range(2)]
        whole = Case(rng, name, BATCH)

        def sharded(method, shards=shards):
            list(pool.map(lambda c: getattr(c, method)(), shards))

        methods = [("forward", f"{name} fwd"), ("backward", f"{name} bwd")]
        if name == "conv2":
            methods += [("pool_forward", "maxpool fwd"), ("pool_backward", "maxpool bwd")]
        for method, label in methods:
            with threadpool_limits(1, user_api="blas"):
                t2 = best_ms(lambda m=method: sharded(m), repeats)
            with threadpool_limits(2, user_api="blas"):
                t1 = best_ms(getattr(whole, method), repeats)
            rows[label] = (t2, t1)
    pool.shutdown()
    return rows


def tensorflow(repeats: int) -> dict[str, float]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    rng = np.random.default_rng(0)
    rows: dict[str, float] = {}
    for name, (h, c, co) in CONVS.items():
        x = tf.constant(rng.standard_normal((BATCH, h, h, c)).astype(np.float32))
        k = tf.constant((rng.standard_normal((3, 3, c, co)) * 0.1).astype(np.float32))
        b = tf.constant(np.zeros(co, np.float32))
        fwd = tf.function(lambda x, k, b: tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, k, 1, "VALID"), b)))
        y = fwd(x, k, b)
        gy = tf.constant(rng.standard_normal(y.shape).astype(np.float32))
        first = name == "conv1"

        @tf.function
        def bwd(x, k, y, gy, first=first):
            dz = tf.raw_ops.ReluGrad(gradients=gy, features=y)
            db = tf.raw_ops.BiasAddGrad(out_backprop=dz)
            dk = tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=tf.shape(k), out_backprop=dz,
                                                 strides=[1, 1, 1, 1], padding="VALID")
            if first:
                return dk, db
            dx = tf.raw_ops.Conv2DBackpropInput(input_sizes=tf.shape(x), filter=k, out_backprop=dz,
                                                strides=[1, 1, 1, 1], padding="VALID")
            return dk, db, dx

        rows[f"{name} fwd"] = best_ms(lambda: fwd(x, k, b).numpy(), repeats)
        rows[f"{name} bwd"] = best_ms(lambda: [t.numpy() for t in bwd(x, k, y, gy)], repeats)
        if name == "conv2":
            pool_fwd = tf.function(lambda y: tf.nn.max_pool2d(y, 2, 2, "VALID"))
            p = pool_fwd(y)
            pg = tf.constant(rng.standard_normal(p.shape).astype(np.float32))
            pool_bwd = tf.function(lambda y, p, pg: tf.raw_ops.MaxPoolGrad(
                orig_input=y, orig_output=p, grad=pg, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID"))
            rows["maxpool fwd"] = best_ms(lambda: pool_fwd(y).numpy(), repeats)
            rows["maxpool bwd"] = best_ms(lambda: pool_bwd(y, p, pg).numpy(), repeats)
    return rows


def algorithms(repeats: int) -> None:
    """Single-threaded, 32 samples: the comparison behind choose_cpu_algorithm's direct 3x3 rule."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 28, 28, 1)).astype(np.float32)
    k = rng.standard_normal((3, 3, 1, 32)).astype(np.float32)
    b = np.zeros(32, np.float32)
    y = np.empty((32, 26, 26, 32), np.float32)
    with threadpool_limits(1, user_api="blas"):
        for algo in ("gemm", "direct"):
            t = best_ms(lambda a=algo: K.conv2d_forward_cpu(x, k, b, y, activation="relu", algorithm=a), repeats)
            print(f"  conv1 forward, 32 samples, 1 thread, algorithm={algo}: {t:.3f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--no-tf", action="store_true", help="skip TensorFlow")
    ap.add_argument("--algorithms", action="store_true", help="also print the gemm-vs-direct comparison")
    args = ap.parse_args()
    blas = [(i["internal_api"], i.get("architecture"), i["num_threads"]) for i in threadpool_info()
            if i["user_api"] == "blas"]
    print(f"BLAS: {blas}  OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}  cores={os.cpu_count()}")
    ours_rows = ours(args.repeats)
    tf_rows = {} if args.no_tf else tensorflow(args.repeats)
    print(f"\nMNIST CNN conv/pool ops, batch {BATCH}, ms per op (best of {args.repeats})")
    print(f"{'op':<14}{'ours 2x32':>11}{'ours 1x64':>11}{'tf':>9}{'tf/ours':>9}")
    totals = [0.0, 0.0, 0.0]
    for label, (t2, t1) in ours_rows.items():
        tf_t = tf_rows.get(label, float("nan"))
        best = min(t2, t1)
        totals = [totals[0] + t2, totals[1] + t1, totals[2] + tf_t]
        print(f"{label:<14}{t2:>11.2f}{t1:>11.2f}{tf_t:>9.2f}{tf_t / best:>8.2f}x")
    print(f"{'total':<14}{totals[0]:>11.2f}{totals[1]:>11.2f}{totals[2]:>9.2f}"
          f"{totals[2] / min(totals[0], totals[1]):>8.2f}x")
    if args.algorithms:
        print("\nchoose_cpu_algorithm evidence:")
        algorithms(args.repeats)


if __name__ == "__main__":
    main()
