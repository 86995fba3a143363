"""Strategies on the GPU path under Numba's CUDA simulator: random legal strategies (every piece on the
simulated GPU, which splits each op into several device tasks with their own instances) give the numbers
of the one-processor CPU run."""

import json
import os
import sys
import textwrap

import background_runs  # tests/background_runs.py
import pytest

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "flexflow_keras", "execution")

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    from flexflow_keras import config
    from strategy_cases import graph_of, random_strategy, train
    out = {}
    # the simulator runs every CUDA thread in Python: a CNN step takes ~40 s, so one step of it
    for name, seed, steps in (("mlp", 1, 2), ("embedding", 1, 2), ("cnn", 2, 1)):
        ref = train(name, None, "sequential", cpus=1, steps=steps)
        config.set(gpus=1)
        s = random_strategy(graph_of(name), np.random.default_rng(seed), 1, max_pieces=4)
        got = train(name, s, "threaded", cpus=1, steps=steps)
        config.reset()
        out[f"{name}{seed}"] = {"ref": [ref[0], [w.ravel().tolist() for w in ref[1]]],
                                "got": [got[0], [w.ravel().tolist() for w in got[1]]],
                                "split": sum(1 for _, c in s.configs if c.n_pieces > 1)}
    print(json.dumps(out))
""")


SIMULATED = background_runs.Command(lambda work: dict(
    args=[sys.executable, "-c", SCRIPT, HERE], timeout=900,
    env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1", FF_LOG_LEVEL="WARNING")))


@pytest.mark.background(SIMULATED)
def test_random_strategies_on_the_simulated_gpu_match_the_cpu():
    proc, _ = SIMULATED.result()
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for key, r in results.items():
        assert r["split"] >= 2, key  # the strategy really splits ops
        (l0, w0), (l1, w1) = r["ref"], r["got"]
        for a, b in zip(l0, l1, strict=True):
            assert abs(a - b) <= 1e-5 * abs(a) + 1e-6, (key, l0, l1)
        for a, b in zip(w0, w1, strict=True):
            assert max(abs(p - q) for p, q in zip(a, b, strict=True)) < 2e-5, key
