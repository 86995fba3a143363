"""Convolution-family kernel timings, ours vs TensorFlow's CPU ops, one thread each, in ms per call (best
of N runs): the Conv2DTranspose layers of Keras 2.3.1's mnist_denoising_autoencoder, the Conv1D of its
imdb_cnn and a MobileNet-style 3x3 depthwise layer, 32-sample shards (a data-parallel shard's size).

Forward is the op with its bias (and ReLU where the layer has one); backward is every gradient the
training step needs (input, kernel, bias). TensorFlow's backward row is one tf.function computing the
same gradients of the summed output (it includes its forward, so it is an upper bound of its backward).

    python benchmarks/conv_family_kernels.py [--repeats 10] [--no-tf]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from threadpoolctl import threadpool_limits  # noqa: E402

from kernels import conv1d as C1  # noqa: E402
from kernels import conv_transpose2d as CT  # noqa: E402
from kernels import depthwise_conv2d as DW  # noqa: E402

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def best_ms(fn, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def cases():
    """(name, ours forward, ours backward, tf forward(x, k, b), x, k, b)."""
    out = []
    for name, xs, ks, strides in (("Conv2DTranspose 7x7x64 -> 14x14x64, s2", (32, 7, 7, 64), (3, 3, 64, 64), 2),
                                  ("Conv2DTranspose 14x14x64 -> 28x28x32, s2", (32, 14, 14, 64), (3, 3, 32, 64), 2)):
        x, k, b = rand(*xs), rand(*ks), rand(ks[2])
        y = np.empty((xs[0], xs[1] * strides, xs[2] * strides, ks[2]), np.float32)
        gy, gx, gk, gb = rand(*y.shape), np.empty_like(x), np.empty_like(k), np.empty_like(b)

        def fwd(x=x, k=k, b=b, y=y, s=strides):
            CT.conv2d_transpose_forward_cpu(x, k, b, y, (s, s), "same", "relu")

        def bwd(x=x, k=k, y=y, gy=gy, gx=gx, gk=gk, gb=gb, s=strides):
            CT.conv2d_transpose_backward_cpu(x, k, gy, gx, gk, gb, (s, s), "same", activation="relu", out=y)

        def tf_fwd(tf, x, k, b, shape=y.shape, s=strides):
            return tf.nn.relu(tf.nn.conv2d_transpose(x, k, shape, s, "SAME") + b)
        out.append((name, fwd, bwd, tf_fwd, x, k, b))
    x, k, b = rand(32, 400, 50), rand(3, 50, 250), rand(250)
    y = np.empty((32, 398, 250), np.float32)
    gy, gx, gk, gb = rand(*y.shape), np.empty_like(x), np.empty_like(k), np.empty_like(b)
    out.append(("Conv1D 400x50 -> 398x250, k3 (imdb_cnn)",
                lambda x=x, k=k, b=b, y=y: C1.conv1d_forward_cpu(x, k, b, y, 1, "valid", 1, "relu"),
                lambda x=x, k=k, y=y, a=(gy, gx, gk, gb): C1.conv1d_backward_cpu(x, k, y, *a, 1, "valid", 1, "relu"),
                lambda tf, x, k, b: tf.nn.relu(tf.nn.conv1d(x, k, 1, "VALID") + b), x, k, b))
    x, k, b = rand(32, 28, 28, 64), rand(3, 3, 64, 1), rand(64)
    y = np.empty((32, 28, 28, 64), np.float32)
    gy, gx, gk, gb = rand(*y.shape), np.empty_like(x), np.empty_like(k), np.empty_like(b)
    out.append(("DepthwiseConv2D 28x28x64, 3x3 same",
                lambda x=x, k=k, b=b, y=y: DW.depthwise_conv2d_forward_cpu(x, k, b, y, 1, "same"),
                lambda x=x, k=k, a=(gy, gx, gk, gb): DW.depthwise_conv2d_backward_cpu(x, k, *a, 1, "same"),
                lambda tf, x, k, b: tf.nn.depthwise_conv2d(x, k, (1, 1, 1, 1), "SAME") + b, x, k, b))
    return out


def tf_times(tf, fwd, x, k, b, repeats: int) -> tuple[float, float]:
    xv, kv, bv = tf.constant(x), tf.Variable(k), tf.Variable(b)

    @tf.function
    def forward():
        return fwd(tf, xv, kv, bv)

    @tf.function
    def gradients():
        with tf.GradientTape() as tape:
            tape.watch(xv)
            total = tf.reduce_sum(fwd(tf, xv, kv, bv))
        return tape.gradient(total, [xv, kv, bv])

    return best_ms(lambda: forward().numpy(), repeats), best_ms(lambda: [g.numpy() for g in gradients()], repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--no-tf", action="store_true")
    args = parser.parse_args()
    tf = None
    if not args.no_tf:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    print(f"{'ms per call (one thread)':44s} {'ours fwd':>9s} {'ours bwd':>9s} {'tf fwd':>9s} {'tf f+b':>9s}")
    with threadpool_limits(1):
        for name, fwd, bwd, tf_fwd, x, k, b in cases():
            ours = best_ms(fwd, args.repeats), best_ms(bwd, args.repeats)
            theirs = tf_times(tf, tf_fwd, x, k, b, args.repeats) if tf is not None else (float("nan"),) * 2
            print(f"{name:44s} {ours[0]:9.2f} {ours[1]:9.2f} {theirs[0]:9.2f} {theirs[1]:9.2f}")


if __name__ == "__main__":
    main()
