"""What a fit holds of the machine: kernel threads follow the cores other processes leave free
(runtime/cpuload.py, re-read at the start of every fit and epoch), and a strategy change lets the old
strategy's activation buffers go."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.execution.context import get_runtime
from flexflow_keras.ops.strategy import devices_used

threadpoolctl = pytest.importorskip("threadpoolctl")


def blas_threads() -> int:
    return max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs 2 cores to see the threads narrowed")
def test_busy_cores_narrow_the_blas_threads_and_free_ones_widen_them_again(monkeypatch, caplog):
    policy = get_runtime().policy
    free = {"n": policy.cores}
    monkeypatch.setattr(policy.load, "free_cores", lambda: free["n"])
    policy.refresh_free()  # start from all cores free, whatever the machine's load was at the last fit
    free["n"] = 1
    seen = []

    class Probe(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(blas_threads())

    m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    m.compile("sgd", "mse", strategy=None)
    x, y = np.ones((32, 8), np.float32), np.ones((32, 4), np.float32)
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        m.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[Probe()])
    assert seen and set(seen) == {1}
    assert "kernels use the 1 free core(s)" in caplog.text
    free["n"] = policy.cores
    seen.clear()
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        m.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[Probe()])
    engine = m._engine
    used = devices_used(engine.strategy, len(engine.processors))
    assert set(seen) == {max(1, policy.cores // used)}
    assert "cores are free again" in caplog.text


def test_a_new_strategy_lets_the_old_activation_buffers_go():
    import gc
    import weakref

    m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    m.compile("sgd", "mse")
    x, y = np.ones((32, 8), np.float32), np.ones((32, 4), np.float32)
    m.fit(x, y, batch_size=16, epochs=1, verbose=0)
    engine = m._engine
    old = [weakref.ref(s) for s in engine._stores.values()]
    assert old
    other = 2 if engine.strategy != engine.data_parallel(2) else 1
    engine.set_strategy(engine.data_parallel(other))
    gc.collect()
    assert all(r() is None for r in old)
    m.fit(x, y, batch_size=16, epochs=1, verbose=0)  # trains on fresh buffers
