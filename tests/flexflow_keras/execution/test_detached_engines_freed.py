"""Engines dropped by recompiles go back to the system once they add up: a detached engine's task records
and region states reference each other, so only a full garbage collection frees its arrays, and beside
TensorFlow's objects the collector's own full passes are rare. Detaching skips the collection for an engine
under COLLECT_BYTES (a collection costs 0.1-0.5 s), but counts its bytes, and collects once the engines
dropped since the last collection come to it."""

import gc
import weakref

import numpy as np

import flexflow_keras as keras
from flexflow_keras.execution import engine as engine_module


def test_small_detached_engines_are_collected_once_they_add_up():
    m = keras.Sequential([keras.Input((512,)), keras.layers.Dense(1024), keras.layers.Dense(10)])
    x, y = np.ones((8, 512), "float32"), np.ones((8, 10), "float32")
    gone = []
    gc.collect()
    gc.disable()  # only the collections the engine runs
    try:
        for _ in range(12):  # each engine counts about 8.5 MB: 4 x its 2.1 MB of weights
            m.compile(optimizer="sgd", loss="mse")
            m.fit(x, y, batch_size=8, verbose=0)
            gone.append(weakref.ref(m._engine))
        m.compile(optimizer="sgd", loss="mse")  # detaches the last one
        alive = sum(ref() is not None for ref in gone)
    finally:
        gc.enable()
    assert alive <= engine_module.COLLECT_BYTES // (8 * 2**20), f"{alive} of 12 detached engines still held"
