"""Loader pipeline throughput against tf.keras, and the stall report.

    python benchmarks/data_pipeline.py                 # 2,000 JPEGs at 224x224, 10 classes, batch 64
    python benchmarks/data_pipeline.py --images 200    # a quick check (figures meaningless on a busy host)
    python benchmarks/data_pipeline.py --augment       # also with RandomFlip + RandomRotation mapped over the data

1. Generates a folder of JPEGs (smooth random colour fields, Pillow, quality 90) in a temporary folder.
2. Images/s of one full pass, decoded and resized to 224x224 into batches of 64: our loader pipeline
   (load_batch tasks on N CPU processors into the zero-copy ring, -ll:cpu N) against
   `tf.keras.utils.image_dataset_from_directory` with a private thread pool of N threads (its map's
   parallelism), for N in --workers, alternating ours and TF in every run; median and spread (min..max)
   over --runs runs, and the ratio of medians. Each measurement runs in a fresh Python process, as a
   user's training does (one framework per process: TensorFlow's thread pools cannot linger into our
   run, nor ours into its); --same-process measures both in this process instead.
3. A small CNN trained for two epochs on the folder (images read at --cnn-size) with -ll:cpu 1 and
   -ll:cpu 4: whether the stall report fired in the second epoch, and the measured wait.

Run it on a quiet machine: both sides are CPU bound, so other load changes the figures.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from PIL import Image  # noqa: E402

from flexflow_keras.data.images import ImageFolderSource, index_image_folder  # noqa: E402
from flexflow_keras.data.pipeline import LoaderPipeline  # noqa: E402
from runtime import Machine, Runtime  # noqa: E402
from runtime.machine import MB  # noqa: E402


def make_folder(root: str, images: int, size: int, classes: int) -> str:
    rng = np.random.default_rng(0)
    for i in range(images):
        cls = f"class_{i % classes:02d}"
        os.makedirs(os.path.join(root, cls), exist_ok=True)
        coarse = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
        img = Image.fromarray(coarse).resize((size, size), Image.Resampling.BICUBIC)
        img.save(os.path.join(root, cls, f"{i:05d}.jpg"), quality=90)
    return root


def _our_augment():
    from flexflow_keras import layers

    flip, rotate = layers.RandomFlip("horizontal", seed=1), layers.RandomRotation(0.1, seed=2)
    return lambda xs, ys: ([np.asarray(rotate(flip(xs[0])))], ys)


def ours(folder: str, workers: int, size: int, batch: int, augment: bool = False) -> float:
    paths, labels, names = index_image_folder(folder)
    source = ImageFolderSource(paths, labels, names, (size, size), 3)
    slot_mb = (batch * size * size * 3 * 4 + batch * 8) / MB
    rtm = Runtime(Machine(cpus=workers, zsize=int(slot_mb * 4) + 1))
    try:
        t0 = time.perf_counter()
        pipe = LoaderPipeline(rtm, source, [labels], batch, transform=_our_augment() if augment else None)
        rows = np.arange(source.num_samples)
        batches = [rows[i:i + batch] for i in range(0, len(rows), batch)]
        pipe.start_epoch(batches)
        for b in range(len(batches)):
            pipe.take(b)
            pipe.consumed(b, None)
        seconds = time.perf_counter() - t0
        pipe.close()
    finally:
        rtm.shutdown()
    return source.num_samples / seconds


def theirs(folder: str, workers: int, size: int, batch: int, augment: bool = False) -> float:
    import tensorflow as tf

    t0 = time.perf_counter()
    ds = tf.keras.utils.image_dataset_from_directory(folder, image_size=(size, size), batch_size=batch,
                                                     shuffle=False, verbose=False)
    if augment:  # keras.io's recipe: the augmentation layers in the dataset's map, in parallel
        flip = tf.keras.layers.RandomFlip("horizontal", seed=1)
        rotate = tf.keras.layers.RandomRotation(0.1, seed=2)
        ds = ds.map(lambda x, y: (rotate(flip(x)), y), num_parallel_calls=workers)
    options = tf.data.Options()
    options.threading.private_threadpool_size = workers
    ds = ds.with_options(options)
    n = 0
    for x, _ in ds:
        n += int(x.shape[0])
    return n / (time.perf_counter() - t0)


def stall_run(folder: str, cpus: int, size: int, batch: int) -> tuple[bool, float, float]:
    import flexflow_keras as keras
    from flexflow_keras import layers

    keras.config.set(cpus=cpus)
    ds = keras.utils.image_dataset_from_directory(folder, image_size=(size, size), batch_size=batch, seed=1,
                                                  verbose=False)
    model = keras.Sequential([keras.Input((size, size, 3)), layers.Conv2D(8, 3, activation="relu"),
                              layers.MaxPooling2D(2), layers.Conv2D(16, 3, activation="relu"),
                              layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(len(ds.class_names))])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ds, epochs=2, verbose=0)  # the first epoch also records the step's trace: report the second
    rec = model._last_fit_stats["data_stalls"][-1]
    return rec.fired, rec.wait_s, rec.seconds


def measure(side: str, folder: str, workers: int, size: int, batch: int, same_process: bool,
            augment: bool = False) -> float:
    """Images/s of one pass by `side` ("ours" or "tf"), in a fresh process unless `same_process`."""
    if same_process:
        return (ours if side == "ours" else theirs)(folder, workers, size, batch, augment)
    cmd = [sys.executable, os.path.abspath(__file__), "--measure", side, "--folder", folder, "--workers",
           str(workers), "--size", str(size), "--batch", str(batch)] + (["--augment"] if augment else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"the {side} measurement failed:\n{proc.stderr[-2000:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def spread(values) -> str:
    return f"{statistics.median(values):8.1f} ({min(values):.1f}..{max(values):.1f})"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cnn-size", type=int, default=32, help="image size the stall run's CNN reads")
    ap.add_argument("--no-tf", action="store_true", help="skip TensorFlow (ours only)")
    ap.add_argument("--same-process", action="store_true",
                    help="measure both frameworks in this process (default: a fresh process per measurement)")
    ap.add_argument("--augment", action="store_true",
                    help="also map RandomFlip + RandomRotation over the batches (keras.io's recipe) on both sides")
    ap.add_argument("--measure", choices=("ours", "tf"), help=argparse.SUPPRESS)  # one measurement (child)
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    logging.getLogger("flexflow_keras").setLevel(logging.ERROR)
    if args.measure:
        print(measure(args.measure, args.folder, int(args.workers), args.size, args.batch, True, args.augment))
        return
    workers = [int(w) for w in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="ff_images_") as tmp:
        t0 = time.perf_counter()
        folder = make_folder(tmp, args.images, args.size, args.classes)
        print(f"generated {args.images} JPEGs of {args.size}x{args.size} in {args.classes} classes "
              f"({time.perf_counter() - t0:.1f} s); {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
        modes = [False, True] if args.augment else [False]
        results = {(side, w, a): [] for w in workers for side in ("ours", "tf") for a in modes}
        for _ in range(args.runs):
            for a in modes:
                for w in workers:
                    results[("ours", w, a)].append(measure("ours", folder, w, args.size, args.batch,
                                                           args.same_process, a))
                    if not args.no_tf:
                        results[("tf", w, a)].append(measure("tf", folder, w, args.size, args.batch,
                                                             args.same_process, a))
        where = "both in this process" if args.same_process else "each in a fresh process"
        print(f"\nimages/s, one pass, {args.size}x{args.size}, batch {args.batch}: median (min..max) of {args.runs}, "
              f"{where}")
        print(f"{'map':>22} | {'workers':>7} | {'flexflow_keras':>24} | {'tf.keras':>24} | ratio")
        for a in modes:
            for w in workers:
                mine, tf_ = results[("ours", w, a)], results[("tf", w, a)]
                ratio = f"{statistics.median(mine) / statistics.median(tf_):.2f}x" if tf_ else "-"
                label = "flip + rotation" if a else "none"
                print(f"{label:>22} | {w:>7} | {spread(mine):>24} | {spread(tf_) if tf_ else '-':>24} | {ratio}")
        print(f"\nstall report, small CNN on the folder at {args.cnn_size}x{args.cnn_size}, second epoch:")
        print(f"{'-ll:cpu':>8} | {'report fired':>12} | {'data wait':>10} | epoch")
        for cpus in (1, 4):
            fired, wait, seconds = stall_run(folder, cpus, args.cnn_size, args.batch)
            print(f"{cpus:>8} | {'yes' if fired else 'no':>12} | {wait:9.2f}s | {seconds:.2f} s "
                  f"({100 * wait / max(seconds, 1e-9):.0f}%)")


if __name__ == "__main__":
    main()
