"""`WeightStore.pull_many` (an engine handing its trained weights to the host) reads the weights with one
wait per `PULL_BYTES` of them: the reads of one `rtm.read_many` all hold their host copies until it returns,
so reading a whole model in one call held a second copy of every weight at once (one weight's at a time
before 0587477)."""

from __future__ import annotations

import tracemalloc

import numpy as np

from flexflow_keras.execution import store
from flexflow_keras.execution.context import get_runtime
from flexflow_keras.ops.graph import Variable


def test_pulling_weights_holds_at_most_pull_bytes_of_copies(monkeypatch):
    rtm = get_runtime()
    variables = [Variable(f"w{i}", (1 << 18,), "float32", np.full(1 << 18, float(i), np.float32))
                 for i in range(12)]  # 1 MB each
    weights = store.WeightStore(rtm, variables, set(), None)
    for i, v in enumerate(variables):
        rtm.fill(weights.value[v.uid], 10.0 + i)
    monkeypatch.setattr(store, "PULL_BYTES", 2 << 20)
    tracemalloc.start()
    try:
        weights.pull_many(variables)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    for i, v in enumerate(variables):
        assert (v._value == 10.0 + i).all()
    assert peak < 4 << 20, f"pulling 12 MB of weights held {peak / 2**20:.1f} MB of copies at once"
