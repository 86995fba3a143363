"""Activation stores of other batch sizes go when a new one would not fit (execution/store_budget.py):
fit's epoch-end partial batch, the validation and evaluate batches each had a store of their own, all
kept, and keras.io's small-data ViT ran out of memory at its test evaluation."""

from __future__ import annotations

import logging
import weakref

import numpy as np

import flexflow_keras as keras
from flexflow_keras.execution import store_budget


def _model(seed_weights=None):
    m = keras.Sequential([keras.Input((6,)), keras.layers.Dense(5, activation="relu"), keras.layers.Dense(3)])
    if seed_weights is not None:
        m.set_weights(seed_weights)
    m.compile("adam", "mse", strategy=None)
    return m


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(40, 6)).astype("float32"), rng.normal(size=(40, 3)).astype("float32")


def test_a_full_memory_drops_the_other_batch_sizes_stores_and_frees_them(monkeypatch, caplog):
    x, y = _data()
    w0 = _model().get_weights()
    kept = _model(w0)  # every store kept: the reference numbers
    h_kept = kept.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    assert sorted(kept._engine._stores) == [8, 16]

    freed = []
    original_drop = store_budget.drop

    def drop(engine, batch):
        ref = weakref.ref(next(iter(engine._stores[batch].acts.values())))
        original_drop(engine, batch)
        freed.append((engine, batch, ref() is None))  # nothing pins it: no step in flight, no handle left behind

    monkeypatch.setattr(store_budget, "free_bytes", lambda engine: 0)  # no room beside any other store
    monkeypatch.setattr(store_budget, "drop", drop)
    m = _model(w0)
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        h = m.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    # epoch 1's last batch, epoch 2's first and last (and, with no room at all, the other model's stores)
    assert [(b, f) for e, b, f in freed if e is m._engine] == [(16, True), (8, True), (16, True)]
    assert list(m._engine._stores) == [8]
    assert "activation store of batch size 16" in caplog.text and "records its step again" in caplog.text
    np.testing.assert_array_equal(h.history["loss"], h_kept.history["loss"])  # the same steps, recorded again
    for a, b in zip(m.get_weights(), kept.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    ev = m.evaluate(x[:5], y[:5], verbose=0)
    assert list(m._engine._stores) == [5] and np.isclose(ev, kept.evaluate(x[:5], y[:5], verbose=0))


def test_room_enough_keeps_every_store():
    x, y = _data()
    m = _model()
    m.fit(x, y, batch_size=16, epochs=1, verbose=0, validation_split=0.25)
    assert sorted(m._engine._stores) == [10, 14, 16]  # 30 training samples: 16 and 14; 10 validation
    stores = m._engine._stores
    store_budget.touch(stores, 16)
    assert next(reversed(stores)) == 16


def test_system_memory_counts_what_the_system_has_available(monkeypatch):
    """sysmem's capacity is the machine's RAM, shared with other processes: a ViT fit was killed by the
    system with the pool's accounting still showing room for its second store."""
    x, y = _data()
    m = _model()
    m.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert store_budget.free_bytes(m._engine) <= store_budget.system_available()
    monkeypatch.setattr(store_budget, "system_available", lambda: 0)
    assert store_budget.free_bytes(m._engine) == 0 and store_budget.crowded(m._engine, 12)
    assert not store_budget.crowded(m._engine, 8)  # held already
    m.fit(x, y, batch_size=12, epochs=1, verbose=0)  # 12, 12, 12, 4: each new size alone
    assert list(m._engine._stores) == [4]


def test_a_new_models_store_releases_an_earlier_models_when_memory_is_short(monkeypatch, caplog):
    """keras.io's vit_small_ds trains one ViT, keeps it, and trains another: the first model's stores stay
    beside the second's (22.4 GB at batch 256 on a 24 GB machine) where TensorFlow frees a step's buffers."""
    x, y = _data()
    w0 = _model().get_weights()
    first = _model(w0)
    h1 = first.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    assert list(first._engine._stores) == [8]
    ref = weakref.ref(next(iter(first._engine._stores[8].acts.values())))
    second = _model(w0)
    monkeypatch.setattr(store_budget, "free_bytes", lambda engine: 0 if first._engine._stores else 1 << 40)
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        h2 = second.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    assert first._engine._stores == {} and ref() is None  # released and freed
    assert f"of another model ({first._engine.name})" in caplog.text
    # its estimate had no store to go by: every batched activation and its gradient, 4 bytes each
    assert store_budget.graph_bytes_per_sample(second._engine) == 2 * 4 * (5 + 3 + 1)  # dense, dense, loss
    np.testing.assert_array_equal(h2.history["loss"], h1.history["loss"])
    monkeypatch.setattr(store_budget, "free_bytes", lambda engine: 1 << 40)
    again = first.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)  # records its step again
    twin = _model(w0)
    twin.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_array_equal(again.history["loss"], twin.fit(x, y, batch_size=8, epochs=1, shuffle=False,
                                                                  verbose=0).history["loss"])
