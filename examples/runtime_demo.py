"""A small program on the task runtime alone: an index launch, a reduction, futures and a trace.

Run: python examples/runtime_demo.py [-ll:cpu 2] [-lg:prof 1 -lg:prof_logfile demo_profile.json]

It splits a matrix into row blocks, scales each block in its own point task, reduces the column sums
of every block into one vector with Reduce("+"), reads a per-block norm back as futures, and repeats the
step under a trace (recorded once, then replayed). It checks every number against NumPy and exits 0.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import runtime as rt  # noqa: E402


@rt.task(privileges=[rt.RO, rt.WD])
def scale(x, y, factor):
    y[...] = x * factor


@rt.task(privileges=[rt.RO, rt.Reduce("+")])
def column_sums(y, total):
    total += y.sum(axis=0)


@rt.task(privileges=[rt.RO])
def block_norm(y):
    return float(np.sqrt((y * y).sum()))


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if not any(a.startswith("-ll:cpu") for a in argv):
        argv = ["-ll:cpu", "2", *argv]
    degree = 4
    data = np.arange(64 * 8, dtype=np.float64).reshape(64, 8) / 100.0
    with rt.Runtime.from_args(argv) as rtm:
        X = rt.Region(data.shape, np.float64, name="x")
        Y = rt.Region(data.shape, np.float64, name="y")
        S = rt.Region((8,), np.float64, name="colsum")
        P, Q = rt.Partition.equal(X, (degree, 1)), rt.Partition.equal(Y, (degree, 1))
        rtm.write(X, data)
        for step in range(5):
            factor = 1.0 + step
            with rtm.trace("step"):
                rtm.fill(S, 0.0)
                rtm.index_launch(scale, P.color_shape, P, Q, factor)
                rtm.index_launch(column_sums, P.color_shape, Q, S)
                norms = rtm.index_launch(block_norm, P.color_shape, Q)
            sums = rtm.read(S)
            expect = (data * factor).sum(axis=0)
            if not np.allclose(sums, expect):
                print(f"step {step}: column sums {sums} differ from NumPy {expect}", file=sys.stderr)
                return 1
            blocks = np.split(data * factor, degree)
            if not np.allclose(norms.get(), [np.linalg.norm(b) for b in blocks]):
                print(f"step {step}: block norms differ from NumPy", file=sys.stderr)
                return 1
            print(f"step {step}: factor {factor:.0f}, column sums[:3] = {np.round(sums[:3], 2)}, "
                  f"block norms = {np.round(norms.get(), 2)}")
        stats = rtm.stats
        machine = rtm.machine
    print(machine.describe())
    print(f"{stats.analyzed_points} point tasks analysed, {stats.replayed_points} replayed from the trace "
          f"({stats.recorded_traces} recording, {stats.replayed_traces} replays), {stats.folds} reduction folds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
