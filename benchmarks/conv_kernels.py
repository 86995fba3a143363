"""Conv / pool kernel timings for the MNIST CNN (Conv2D(32,3,relu) -> Conv2D(64,3,relu) -> MaxPool(2)),
batch 64: ours vs TensorFlow's CPU kernels, in ms per op (best of N runs).

Ours runs the way data-parallel training runs it on this 2-core machine: two 32-sample shards at once on
two threads with one BLAS thread each ("ours 2x32"); and as one 64-sample call with two BLAS threads
("ours 1x64"). TensorFlow runs its own ops at batch 64 on its default thread pools (one intra-op thread
per core). Backward rows are what each framework executes for the gradient: ReluGrad + BiasAddGrad +
Conv2DBackpropFilter (+ Conv2DBackpropInput) for TF; one fused conv2d_backward_cpu call for us.

    python benchmarks/conv_kernels.py [--repeats 30] [--no-tf] [--algorithms] [--single-thread]

`--algorithms` also prints the single-threaded comparison behind `kernels.conv2d.choose_cpu_algorithm`.
`--single-thread` prints instead the CPU time of each op on one thread for a 32-sample shard, ours (thread
CPU time, one BLAS thread) against TensorFlow's (process CPU time, intra- and inter-op pools of one
thread): the figures that stay comparable on a shared, loaded machine, where wall times do not.
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

from kernels import _conv_simd as _simd  # noqa: E402
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
        gx = None if self.first else self.gx
        K.conv2d_backward_cpu(self.x, self.k, self.y, self.gy, gx, self.gk, self.gb, activation="relu")

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


def _tf_layer(tf, rng, name: str, repeats: int, rows: dict[str, float], batch: int = BATCH, timer=None) -> None:
    timer = timer or best_ms
    h, c, co = CONVS[name]
    x = tf.constant(rng.standard_normal((batch, h, h, c)).astype(np.float32))
    k = tf.constant((rng.standard_normal((3, 3, c, co)) * 0.1).astype(np.float32))
    b = tf.constant(np.zeros(co, np.float32))
    fwd = tf.function(lambda x, k, b: tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, k, 1, "VALID"), b)))
    y = fwd(x, k, b)
    gy = tf.constant(rng.standard_normal(y.shape).astype(np.float32))
    first = name == "conv1"

    @tf.function
    def bwd(x, k, y, gy):
        dz = tf.raw_ops.ReluGrad(gradients=gy, features=y)
        db = tf.raw_ops.BiasAddGrad(out_backprop=dz)
        dk = tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=tf.shape(k), out_backprop=dz,
                                             strides=[1, 1, 1, 1], padding="VALID")
        if first:
            return dk, db
        dx = tf.raw_ops.Conv2DBackpropInput(input_sizes=tf.shape(x), filter=k, out_backprop=dz,
                                            strides=[1, 1, 1, 1], padding="VALID")
        return dk, db, dx

    rows[f"{name} fwd"] = timer(lambda: fwd(x, k, b).numpy(), repeats)
    rows[f"{name} bwd"] = timer(lambda: [t.numpy() for t in bwd(x, k, y, gy)], repeats)
    if name != "conv2":
        return
    pool_fwd = tf.function(lambda y: tf.nn.max_pool2d(y, 2, 2, "VALID"))
    p = pool_fwd(y)
    pg = tf.constant(rng.standard_normal(p.shape).astype(np.float32))
    pool_bwd = tf.function(lambda y, p, pg: tf.raw_ops.MaxPoolGrad(
        orig_input=y, orig_output=p, grad=pg, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID"))
    rows["maxpool fwd"] = timer(lambda: pool_fwd(y).numpy(), repeats)
    rows["maxpool bwd"] = timer(lambda: pool_bwd(y, p, pg).numpy(), repeats)


def tensorflow(repeats: int) -> dict[str, float]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    rng = np.random.default_rng(0)
    rows: dict[str, float] = {}
    for name in CONVS:
        _tf_layer(tf, rng, name, repeats, rows)
    return rows


def best_cpu_ms(fn, repeats: int) -> float:
    """Best thread CPU time of fn (single-threaded comparisons stay fair on a busy machine)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t)
    return best * 1e3


def _algorithm_case(rng, h: int, c: int, co: int, others: tuple[str, ...], repeats: int, n: int = 32) -> None:
    x = rng.standard_normal((n, h, h, c)).astype(np.float32)
    k = (rng.standard_normal((3, 3, c, co)) * 0.1).astype(np.float32)
    b = np.zeros(co, np.float32)
    y = np.empty((n, h - 2, h - 2, co), np.float32)
    K.conv2d_forward_cpu(x, k, b, y, activation="relu")
    gy = rng.standard_normal(y.shape).astype(np.float32)
    gx, gk, gb = np.empty_like(x), np.empty_like(k), np.empty_like(b)

    def forward(algorithm):
        K.conv2d_forward_cpu(x, k, b, y, activation="relu", algorithm=algorithm)

    def backward(algorithm):  # a single-channel input is a first layer: no input gradient
        K.conv2d_backward_cpu(x, k, y, gy, gx if c > 1 else None, gk, gb, activation="relu", algorithm=algorithm)

    passes = (("forward", forward),) if others == ("direct",) else (("forward", forward), ("backward", backward))
    auto = K.choose_cpu_algorithm(K.conv_geometry(x.shape, k.shape))
    for pass_, fn in passes:
        times = "".join(f"{best_cpu_ms(lambda f=fn, a=a: f(a), repeats):>10.2f}" for a in ("gemm",) + others)
        print(f"{f'{n} x {h}x{h}, {c} -> {co}':<26}{pass_:<10}{times}  {'/'.join(others)}; auto: {auto}")


def _dx_case(rng, n: int, h: int, c: int, co: int, kh: int, stride: int, repeats: int) -> None:
    x = rng.standard_normal((n, h, h, c)).astype(np.float32)
    k = (rng.standard_normal((kh, kh, c, co)) * 0.1).astype(np.float32)
    g = K.conv_geometry(x.shape, k.shape, stride)
    y = np.empty((n, g.oh, g.ow, co), np.float32)
    gy = rng.standard_normal(y.shape).astype(np.float32)
    gx = np.empty_like(x)
    rule = K.choose_dx_algorithm
    row = []
    try:
        for algorithm in ("col2im", "phase"):
            K.choose_dx_algorithm = lambda _g, a=algorithm: a
            row.append(best_cpu_ms(lambda: K.conv2d_backward_cpu(x, k, y, gy, gx, None, None, stride,
                                                                  algorithm="gemm"), repeats))
    finally:
        K.choose_dx_algorithm = rule
    print(f"{f'{n} x {h}x{h}, {c} -> {co}, {kh}x{kh} s{stride}':<34}{row[0]:>10.2f}{row[1]:>10.2f}  rule: {rule(g)}")


def algorithms(repeats: int) -> None:
    """Single-threaded (thread CPU time): the comparisons behind kernels.conv2d.choose_cpu_algorithm
    (32-sample shards, then few pixels with many channels) and choose_dx_algorithm."""
    rng = np.random.default_rng(1)
    wg = ("winograd", "winograd4")
    print(f"{'N x input, 3x3 valid':<26}{'pass':<10}{'gemm':>10}{'others':>10}")
    cases = [((28, 1, 32), ("direct",)), ((26, 32, 64), wg), ((28, 8, 16), wg), ((28, 12, 12), wg),
             ((28, 16, 16), wg), ((28, 16, 32), wg), ((28, 24, 24), wg), ((28, 32, 32), wg), ((14, 64, 64), wg),
             ((14, 128, 128), wg), ((6, 64, 64), wg), ((7, 64, 64), wg)]
    few = [(8, 3, 512), (8, 4, 512), (8, 5, 256), (8, 6, 128), (8, 8, 512), (4, 10, 256), (8, 10, 256),
           (16, 10, 128), (32, 9, 128)]  # (N, H, channels): 1x1 to 8x8 outputs, 8-2048 pixels
    with threadpool_limits(1, user_api="blas"):
        for (h, c, co), others in cases:
            _algorithm_case(rng, h, c, co, others, repeats)
        for n, h, c in few:
            _algorithm_case(rng, h, c, c, wg, repeats, n=n)
        print(f"\n{'input gradient: N x input, valid':<34}{'col2im':>10}{'phase':>10}")
        for case in [(32, 18, 128, 128, 3, 1), (8, 3, 512, 512, 3, 1), (32, 6, 256, 256, 3, 1),
                     (32, 30, 128, 16, 3, 1), (32, 30, 64, 16, 3, 1), (32, 16, 128, 128, 3, 2),
                     (32, 16, 128, 128, 4, 2), (32, 8, 512, 512, 2, 2), (32, 36, 512, 3, 5, 1)]:
            _dx_case(rng, *case, repeats)


def _best_process_cpu_ms(fn, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best * 1e3


def single_thread(repeats: int, with_tf: bool) -> None:
    """CPU ms per op for one 32-sample shard on one thread, ours vs TensorFlow's."""
    rng = np.random.default_rng(0)
    rows: dict[str, list[float]] = {}
    with threadpool_limits(1, user_api="blas"):
        for name in CONVS:
            case = Case(rng, name, 32)
            methods = [("forward", f"{name} fwd"), ("backward", f"{name} bwd")]
            if name == "conv2":
                methods += [("pool_forward", "maxpool fwd"), ("pool_backward", "maxpool bwd")]
            for method, label in methods:
                rows[label] = [best_cpu_ms(getattr(case, method), repeats)]
    if with_tf:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf_rows: dict[str, float] = {}
        for name in CONVS:
            _tf_layer(tf, rng, name, repeats, tf_rows, batch=32, timer=_best_process_cpu_ms)
        for label, t in tf_rows.items():
            rows[label].append(t)
    print(f"\nMNIST CNN conv/pool ops, one thread, 32 samples, CPU ms per op (best of {repeats})")
    print(f"{'op':<14}{'ours':>9}{'tf':>9}{'tf/ours':>9}")
    tot = [0.0, 0.0]
    for label, vals in rows.items():
        ours_t, tf_t = vals[0], (vals[1] if len(vals) > 1 else float("nan"))
        tot = [tot[0] + ours_t, tot[1] + tf_t]
        print(f"{label:<14}{ours_t:>9.2f}{tf_t:>9.2f}{tf_t / ours_t:>8.2f}x")
    print(f"{'total':<14}{tot[0]:>9.2f}{tot[1]:>9.2f}{tot[1] / tot[0]:>8.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--no-tf", action="store_true", help="skip TensorFlow")
    ap.add_argument("--algorithms", action="store_true", help="also print the gemm-vs-direct comparison")
    ap.add_argument("--single-thread", action="store_true",
                    help="CPU time per op on one thread (ours vs TF), robust on a loaded machine")
    args = ap.parse_args()
    blas = [(i["internal_api"], i.get("architecture"), i["num_threads"]) for i in threadpool_info()
            if i["user_api"] == "blas"]
    print(f"BLAS: {blas}  OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}  cores={os.cpu_count()}  "
          f"AVX-512 GEMM micro-kernels: {_simd.ENABLED}")
    if args.single_thread:
        single_thread(args.repeats, not args.no_tf)
        return
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
        print("\nchoose_cpu_algorithm / choose_dx_algorithm evidence (ms, 1 thread):")
        algorithms(args.repeats)


if __name__ == "__main__":
    main()
