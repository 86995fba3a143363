"""A small training script the MPI tests run under `mpiexec -n 2` and as one process.

    python mpi_worker.py --models mlp,cnn,mp,emb --dp N --out FILE [--fail raise|kill] [flexflow flags]

Per model (the MLPs with a Dropout layer, whose masks must follow the global sample index; the CNN with
BatchNormalization, whose batch statistics and two-stage backward need the whole batch's sums), trains a few steps on fixed data with fixed initial weights and writes (rank 0) the per-step
losses, the final weights' checksums, every rank's checksums, the checksums read back from a
checkpoint rank 0 wrote, evaluate's results and predict's outputs, as JSON to --out. `mlp` and `cnn` run data parallel at degree --dp on each node;
`mp` is the MLP with a model-parallel first Dense layer (output channels split over the node's two
processors); `span` is a three-layer MLP whose strategy places pieces on devices 0 and 1, which under
`mpiexec -n 2 ... -ll:cpu 1` are on different ranks: d1 data parallel across them, d2's output channels
split across them, the rest on rank 0; `spancnn` the CNN with its convolution and BatchNorm split across
the ranks along the batch and its head on rank 1. `--fail raise` makes rank 1 raise in its second step; `--fail kill` SIGKILLs it there; `--fail task` makes rank 1's Dense
kernel raise inside a runtime task in its third step.
"""

import argparse
import json
import os
import signal
import sys

import numpy as np

import flexflow_keras as keras
from flexflow_keras import layers
from flexflow_keras.execution import distributed
from flexflow_keras.execution.context import get_runtime


class Fail(keras.callbacks.Callback):
    def __init__(self, how):
        super().__init__()
        self.how = how

    def on_train_batch_begin(self, batch, logs=None):
        w = distributed.world()
        if batch == 1 and w is not None and w.rank == 1:
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise ValueError("rank 1 was told to fail (--fail raise)")


class Losses(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))


def build(kind):
    keras.utils.set_random_seed(1)
    if kind == "mlp3":
        return keras.Sequential([keras.Input(shape=(20,)), layers.Dense(16, activation="relu", name="d1"),
                                 layers.Dropout(0.25, name="drop"), layers.Dense(16, activation="relu", name="d2"),
                                 layers.Dense(3, activation="softmax", name="d3")])
    if kind == "emb":  # Adam reads the table's per-lookup moment, summed over the ranks as the gradient is
        return keras.Sequential([keras.Input(shape=(6,), dtype="int32"), layers.Embedding(12, 4, name="e"),
                                 layers.GlobalAveragePooling1D(), layers.Dense(3, activation="softmax", name="d2")])
    if kind == "mlp":
        return keras.Sequential([keras.Input(shape=(20,)), layers.Dense(16, activation="relu", name="d1"),
                                 layers.Dropout(0.25, name="drop"), layers.Dense(3, activation="softmax", name="d2")])
    return keras.Sequential([keras.Input(shape=(8, 8, 1)), layers.Conv2D(4, 3, activation="relu", name="c1"),
                             layers.BatchNormalization(name="bn"), layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(3, activation="softmax",
                                                                                     name="d2")])


def train(kind, args):
    st0 = get_runtime().stats.snapshot()
    p0, m0 = st0.analyzed_points + st0.replayed_points, st0.trace_mismatches
    rs = np.random.RandomState(0)
    n = 64
    x = rs.rand(n, 8, 8, 1).astype("float32") if kind in ("cnn", "spancnn") else rs.rand(n, 20).astype("float32")
    if kind in ("emb", "spanemb"):  # tokens 0-2 repeat within every batch
        x = np.concatenate([rs.randint(0, 3, (n, 3)), rs.randint(0, 12, (n, 3))], axis=1).astype("int32")
    y = rs.randint(0, 3, n)
    model = build({"cnn": "cnn", "span": "mlp3", "spancnn": "cnn", "emb": "emb", "spanemb": "emb"}.get(kind, "mlp"))
    extra = {}
    if kind == "mp":  # within each node: d1's output channels over its two processors
        extra = {"strategy": keras.Strategy({"d1": keras.ParallelConfig((1, 2), (0, 1))})}
    elif kind == "span":  # across the nodes (devices 0 and 1 are processor 0 of ranks 0 and 1 under MPI)
        extra = {"strategy": keras.Strategy({"d1": keras.ParallelConfig((2, 1), (0, 1)),
                                             "d2": keras.ParallelConfig((1, 2), (0, 1))})}
    elif kind == "spanemb":  # the lookups split across the nodes: their table moments summed across them
        extra = {"strategy": keras.Strategy({"e": keras.ParallelConfig((2, 1, 1), (0, 1)),
                                             "d2/dense": keras.ParallelConfig((1, 1), (1,)),
                                             "d2/softmax": keras.ParallelConfig((1, 1), (1,))})}
    elif kind == "spancnn":  # the convolution and BatchNorm's statistics split across the nodes, the head on rank 1
        extra = {"strategy": keras.Strategy({"c1": keras.ParallelConfig((2, 1, 1, 1), (0, 1)),
                                             "bn": keras.ParallelConfig((2, 1, 1, 1), (0, 1)),
                                             "d2/dense": keras.ParallelConfig((1, 1), (1,)),
                                             "d2/softmax": keras.ParallelConfig((1, 1), (1,))})}
    opt = keras.optimizers.Adam(0.05) if kind in ("emb", "spanemb") else keras.optimizers.SGD(0.5)
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"], **extra)
    rec = Losses()
    cbs = [rec] + ([Fail(args.fail)] if args.fail in ("raise", "kill") else [])
    model.fit(x, y, batch_size=16, epochs=2, shuffle=True, callbacks=cbs, verbose=0)
    sums = [float(np.sum(np.abs(w.astype(np.float64)))) for w in model.get_weights()]
    ev = model.evaluate(x, y, batch_size=16, verbose=0)
    pred = model.predict(x[:30], batch_size=30, verbose=0)  # 30 rows: shards of 15 on two ranks
    w = distributed.world()
    every = w.gather(sums) if w is not None else [sums]
    path = f"{args.out}.{kind}.weights.h5"
    model.save_weights(path)  # rank 0 writes; every rank reads it back
    model.load_weights(path)
    back = [float(np.sum(np.abs(v.astype(np.float64)))) for v in model.get_weights()]
    back_every = w.gather(back) if w is not None else [back]
    st = get_runtime().stats
    points = [st.analyzed_points + st.replayed_points - p0, st.trace_mismatches - m0]
    points_every = w.gather(points) if w is not None else [points]
    sp = model._engine.spanning if model._engine is not None else None
    moved = None if sp is None else {"sent": sp.sent, "received": sp.received, "messages": sp.messages,
                                     "regions": sp.moved}
    return {"moved": w.gather(moved) if w is not None else [moved], "losses": rec.losses, "sums": sums, "every_rank": every, "read_back": back_every,
            "evaluate": [float(v) for v in np.atleast_1d(ev)], "predict": pred.astype(np.float64).tolist(),
            "ranks": 1 if w is None else w.size, "points": points_every}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="mlp")
    ap.add_argument("--dp", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--fail", default="")
    args, _ = ap.parse_known_args()
    keras.config.set(data_parallel_degree=args.dp)
    w = distributed.world()
    if args.fail == "task" and w is not None and w.rank == 1:  # rank 1's Dense kernel raises in step 3
        import kernels.linear as kl

        real, calls = kl.linear_forward_cpu, [0]

        def failing(*a, **k):
            calls[0] += 1
            if calls[0] > 4:
                raise FloatingPointError("rank 1's Dense kernel was told to fail (--fail task)")
            return real(*a, **k)

        kl.linear_forward_cpu = failing
    out = {kind: train(kind, args) for kind in args.models.split(",")}
    w = distributed.world()
    if w is None or w.rank == 0:
        with open(args.out, "w") as f:
            json.dump(out, f)
    sys.stdout.write("done\n")


if __name__ == "__main__":
    main()
