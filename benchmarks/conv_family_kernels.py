"""Convolution-family kernel timings, ours vs TensorFlow's CPU ops, one thread each, in ms per call (best
of N runs): the Conv2DTranspose layers of Keras 2.3.1's mnist_denoising_autoencoder, the Conv1D of its
imdb_cnn and a MobileNet-style 3x3 depthwise layer, 32-sample shards (a data-parallel shard's size).

Forward is the op with its bias (and ReLU where the layer has one); backward is every gradient the
training step needs (input, kernel, bias). TensorFlow's backward row is one tf.function computing the
same gradients of the summed output (it includes its forward, so it is an upper bound of its backward).

A second table times each convolution of keras.io's dcgan_overriding_train_step (64x64x3 images, 32
samples) pass by pass: forward, input gradient and kernel gradient, against TensorFlow's op for the same
pass (tf.nn.conv2d / conv2d_transpose, Conv2DBackpropInput / Conv2DBackpropFilter; a transposed
convolution's input gradient is tf.nn.conv2d), ours and TensorFlow's calls alternating in rounds, the
median of each round and the best round (the machine is shared). No bias or activation: those are other ops.

    python benchmarks/conv_family_kernels.py [--repeats 10] [--no-tf] [--dcgan-repeats 3] [--only dcgan]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from threadpoolctl import threadpool_limits  # noqa: E402

from kernels import conv1d as C1  # noqa: E402
from kernels import conv2d as K  # noqa: E402
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


# keras.io dcgan_overriding_train_step: (name, transposed, input size, in channels, filters, kernel, stride)
DCGAN = [("D conv1 64x64x3 -> 32x32x64", False, 64, 3, 64, 4, 2),
         ("D conv2 32x32x64 -> 16x16x128", False, 32, 64, 128, 4, 2),
         ("D conv3 16x16x128 -> 8x8x128", False, 16, 128, 128, 4, 2),
         ("G convT1 8x8x128 -> 16x16x128", True, 8, 128, 128, 4, 2),
         ("G convT2 16x16x128 -> 32x32x256", True, 16, 128, 256, 4, 2),
         ("G convT3 32x32x256 -> 64x64x512", True, 32, 256, 512, 4, 2),
         ("G conv 64x64x512 -> 64x64x3, 5x5 s1", False, 64, 512, 3, 5, 1)]


def median_ms(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def dcgan_passes(tf, transposed: bool, h: int, c: int, f: int, k: int, s: int, batch: int = 32):
    """{pass: (ours, tf or None)} for "fwd", "dx", "dk" of one layer, "same" padding."""
    x = rand(batch, h, h, c)
    oh = h * s if transposed else -(-h // s)
    kernel = rand(k, k, f, c) * 0.05 if transposed else rand(k, k, c, f) * 0.05
    gy = rand(batch, oh, oh, f)
    y, gx, gk = np.empty(gy.shape, np.float32), np.empty_like(x), np.empty_like(kernel)
    if transposed:
        ours = {"fwd": lambda: CT.conv2d_transpose_forward_cpu(x, kernel, None, y, s, "same"),
                "dx": lambda: CT.conv2d_transpose_backward_cpu(x, kernel, gy, gx, None, None, s, "same"),
                "dk": lambda: CT.conv2d_transpose_backward_cpu(x, kernel, gy, None, gk, None, s, "same")}
    else:
        ours = {"fwd": lambda: K.conv2d_forward_cpu(x, kernel, None, y, s, "same"),
                "dx": lambda: K.conv2d_backward_cpu(x, kernel, None, gy, gx, None, None, s, "same"),
                "dk": lambda: K.conv2d_backward_cpu(x, kernel, None, gy, None, gk, None, s, "same")}
    if tf is None:
        return {p: (fn, None) for p, fn in ours.items()}
    xt, kt, gyt, st = tf.constant(x), tf.constant(kernel), tf.constant(gy), [1, s, s, 1]
    if transposed:  # the image and the gradient swap roles: dx is a convolution of gy, dk a filter gradient
        theirs = {"fwd": lambda: tf.nn.conv2d_transpose(xt, kt, gy.shape, s, "SAME"),
                  "dx": lambda: tf.nn.conv2d(gyt, kt, s, "SAME"),
                  "dk": lambda: tf.raw_ops.Conv2DBackpropFilter(input=gyt, filter_sizes=kernel.shape,
                                                                out_backprop=xt, strides=st, padding="SAME")}
    else:
        theirs = {"fwd": lambda: tf.nn.conv2d(xt, kt, s, "SAME"),
                  "dx": lambda: tf.raw_ops.Conv2DBackpropInput(input_sizes=x.shape, filter=kt, out_backprop=gyt,
                                                               strides=st, padding="SAME"),
                  "dk": lambda: tf.raw_ops.Conv2DBackpropFilter(input=xt, filter_sizes=kernel.shape,
                                                                out_backprop=gyt, strides=st, padding="SAME")}
    return {p: (fn, tf.function(theirs[p])) for p, fn in ours.items()}


def dcgan_table(tf, repeats: int, rounds: int = 2) -> None:
    print(f"\nkeras.io dcgan_overriding_train_step convolutions, 32 samples, one thread, ms per call (median of "
          f"{repeats}, best of {rounds} alternating rounds)")
    print(f"{'layer':38s} {'pass':4s} {'ours':>9s} {'tf':>9s} {'ours/tf':>8s}")
    totals = [0.0, 0.0]
    for name, transposed, h, c, f, k, s in DCGAN:
        for pass_, (ours, theirs) in dcgan_passes(tf, transposed, h, c, f, k, s).items():
            mine, other = [], []
            for _ in range(rounds):
                mine.append(median_ms(ours, repeats))
                if theirs is not None:
                    other.append(median_ms(lambda t=theirs: t().numpy(), repeats))
            t_ours, t_tf = min(mine), min(other) if other else float("nan")
            totals = [totals[0] + t_ours, totals[1] + t_tf]
            print(f"{name:38s} {pass_:4s} {t_ours:9.2f} {t_tf:9.2f} {t_ours / t_tf:8.2f}", flush=True)
    print(f"{'total':38s} {'':4s} {totals[0]:9.2f} {totals[1]:9.2f} {totals[0] / totals[1]:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--no-tf", action="store_true")
    parser.add_argument("--dcgan-repeats", type=int, default=3, help="calls per round in the DCGAN table")
    parser.add_argument("--only", choices=["family", "dcgan"], help="print one of the two tables")
    args = parser.parse_args()
    tf = None
    if not args.no_tf:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    with threadpool_limits(1):
        if args.only != "dcgan":
            family_table(tf, args.repeats)
        if args.only != "family":
            dcgan_table(tf, args.dcgan_repeats)


def family_table(tf, repeats: int) -> None:
    print(f"{'ms per call (one thread)':44s} {'ours fwd':>9s} {'ours bwd':>9s} {'tf fwd':>9s} {'tf f+b':>9s}")
    for name, fwd, bwd, tf_fwd, x, k, b in cases():
        ours = best_ms(fwd, repeats), best_ms(bwd, repeats)
        theirs = tf_times(tf, tf_fwd, x, k, b, repeats) if tf is not None else (float("nan"),) * 2
        print(f"{name:44s} {ours[0]:9.2f} {ours[1]:9.2f} {theirs[0]:9.2f} {theirs[1]:9.2f}")


if __name__ == "__main__":
    main()
