"""The Dense layers' GEMMs on one thread: our AVX-512 micro-kernels (`kernels/_conv_simd.simd_gemm`, what
`kernels/linear.py` runs on a one-thread processor) against NumPy's BLAS, on the shapes of the MNIST MLP
and CNN pieces, forward (x @ W) and weight gradient (x^T @ dz), interleaved, median of the repeats.

    python benchmarks/dense_gemm.py [--repeats 150]

TensorFlow has no one-thread GEMM call to set beside these; its Dense layers appear in
benchmarks/vs_tensorflow.py. Prints GFLOP/s per shape.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np
import threadpoolctl

from kernels import _conv_simd

# (rows, inputs, outputs): the MNIST CNN's 9216 -> 128 Dense on a 32- and a 64-sample piece, the MLP's
# layers at batch 64 and 128
SHAPES = [(32, 9216, 128), (64, 9216, 128), (64, 784, 512), (64, 512, 512), (128, 784, 512), (128, 512, 512)]


def _median_s(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=150)
    args = ap.parse_args()
    if not _conv_simd.ENABLED:
        raise SystemExit("the AVX-512 micro-kernels are off on this host (no AVX-512F, or NUMBA_CPU_NAME set)")
    rng = np.random.default_rng(0)
    print(f"{'rows x in x out':>18}  {'fwd ours':>9} {'fwd BLAS':>9}  {'dW ours':>8} {'dW BLAS':>8}"
          "   GFLOP/s, 1 thread")
    with threadpoolctl.threadpool_limits(1):
        for m, k, n in SHAPES:
            x = rng.standard_normal((m, k), dtype=np.float32)
            w = rng.standard_normal((k, n), dtype=np.float32)
            dz = rng.standard_normal((m, n), dtype=np.float32)
            y, dw = np.empty((m, n), np.float32), np.empty((k, n), np.float32)
            runs = {
                "fwd ours": partial(_conv_simd.simd_gemm, False, m, n, k, x, k, w, n, False, y, n),
                "fwd BLAS": partial(np.matmul, x, w, out=y),
                "dW ours": partial(_conv_simd.simd_gemm, True, k, n, m, x, k, dz, n, False, dw, n),
                "dW BLAS": partial(np.matmul, x.T, dz, out=dw),
            }
            flops = 2.0 * m * k * n
            rates = {name: flops / _median_s(fn, args.repeats) / 1e9 for name, fn in runs.items()}
            print(f"{m:>5} x {k:>5} x {n:>4}  {rates['fwd ours']:9.0f} {rates['fwd BLAS']:9.0f}  "
                  f"{rates['dW ours']:8.0f} {rates['dW BLAS']:8.0f}")


if __name__ == "__main__":
    main()
