"""A model that is collected leaves nothing behind in the process-wide runtime: its step traces' records
and the launch caches keyed on its tasks go when the next trace starts. They held its optimizer, its
ops and their regions, so a notebook or a test session that builds many models grew, and every later
model's steps got slower."""

import gc
import weakref

import numpy as np

import flexflow_keras as keras
from flexflow_keras.execution.context import get_runtime


def _fit_one():
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(2)])
    m.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    x, y = np.ones((8, 4), np.float32), np.ones((8, 2), np.float32)
    m.fit(x, y, batch_size=8, epochs=1, verbose=0)
    return m


def test_a_collected_models_traces_and_optimizer_go():
    rt = get_runtime()
    m = _fit_one()
    prefix = m._engine.name + "."
    assert any(name.startswith(prefix) for name in rt._traces)
    optimizer = weakref.ref(m.optimizer)
    del m
    gc.collect()
    _fit_one()  # its first trace drops the records of the collected model's
    assert not [name for name in rt._traces if name.startswith(prefix)]
    gc.collect()
    assert optimizer() is None, gc.get_referrers(optimizer())


def test_many_models_keep_the_live_object_count_flat():
    for _ in range(3):
        _fit_one()
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(20):
        _fit_one()
    gc.collect()
    grown = len(gc.get_objects()) - before
    assert grown < 2000, f"{grown} more live objects after 20 models"  # was about 13700 (684 per model)


def test_an_idle_runtime_holds_no_task_of_a_collected_model():
    """A runtime worker waiting for its next task kept the last one it ran (its loop's local), and with it the
    task's body: the collected model's optimizer stayed until that worker ran something else, so the test
    above failed whenever the next model's steps ran on other workers (after test_coherence.py, say)."""
    m = _fit_one()
    optimizer = weakref.ref(m.optimizer)
    del m
    gc.collect()
    get_runtime().forget_orphan_traces()  # what the next trace's start does
    gc.collect()
    assert optimizer() is None
