"""`Engine.written_uids`: the variables a training step may write. An engine takes over (holds) only these
and the variables no other engine holds (`Engine.attach`), so the set must cover every variable whose
value a step changes, or a model sharing layers with another would lose its training. Checked here from
the outside: the weight regions whose values a fit step changes are all in the set, for layers that
write weights in different ways (optimizer updates, BatchNormalization's moving averages, a stateful
recurrent layer's kept states, a frozen layer)."""

from __future__ import annotations

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import layers


def _changed(model, x, y):
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)  # the engine exists
    engine = model._engine
    regions = engine.weights.value
    before = {v.uid: np.array(engine.rtm.read(regions[v.uid])) for v in engine.variables}
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    after = {v.uid: np.array(engine.rtm.read(regions[v.uid])) for v in engine.variables}
    names = {v.uid: v.path for v in engine.variables}
    changed = {u for u in before if not np.array_equal(before[u], after[u])}
    return engine, changed, names


def _dense_bn(frozen: bool):
    inp = keras.Input((6,))
    h = layers.Dense(5, name="first")(inp)
    h = layers.BatchNormalization(name="bn")(h)
    h = layers.Dropout(0.2)(h)
    out = layers.Dense(2, name="last")(h)
    model = keras.Model(inp, out)
    if frozen:
        model.get_layer("first").trainable = False
    return model


def _stateful_lstm():
    return keras.Sequential([keras.Input((3, 4), batch_size=8), layers.LSTM(5, stateful=True),
                             layers.Dense(2)])


def _embedding():
    return keras.Sequential([keras.Input((5,), dtype="int32"), layers.Embedding(20, 4), layers.GlobalAveragePooling1D(),
                             layers.LayerNormalization(), layers.Dense(2)])


@pytest.mark.parametrize("build, x", [
    (lambda: _dense_bn(False), np.random.default_rng(0).normal(size=(16, 6)).astype("float32")),
    (lambda: _dense_bn(True), np.random.default_rng(1).normal(size=(16, 6)).astype("float32")),
    (_stateful_lstm, np.random.default_rng(2).normal(size=(16, 3, 4)).astype("float32")),
    (_embedding, np.random.default_rng(3).integers(0, 20, (16, 5)).astype("int32")),
], ids=["dense_bn", "dense_bn_first_frozen", "stateful_lstm", "embedding_layernorm"])
def test_every_weight_a_step_changes_is_written(build, x):
    keras.utils.set_random_seed(0)
    model = build()
    model.compile(optimizer="adam", loss="mse")
    y = np.random.default_rng(9).normal(size=(16, 2)).astype("float32")
    engine, changed, names = _changed(model, x, y)
    assert changed, "the step changed nothing: the check would prove nothing"
    missing = sorted(names[u] for u in changed - engine.written_uids())
    assert not missing, f"weights a step wrote that written_uids() leaves out: {missing}"


def test_a_frozen_layer_is_not_written_and_its_weights_do_not_change():
    keras.utils.set_random_seed(0)
    model = _dense_bn(True)
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(1).normal(size=(16, 6)).astype("float32")
    engine, changed, names = _changed(model, x, np.zeros((16, 2), "float32"))
    first = {v.uid for v in model.get_layer("first").weights}
    assert not first & engine.written_uids()
    assert not first & changed
    moving = {v.uid for v in model.get_layer("bn").weights if "moving" in v.path}
    assert len(moving) == 2 and moving <= changed <= engine.written_uids()
