"""A model with an open input dim (Input(shape=(None,))) validated, or predicted on by a callback, at other
lengths during fit: that runs another graph on another engine, and fit's engine must come back with its
weights and optimizer slots (the model kept the validation engine, so predict after fit used weights
from the first epoch)."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import layers

rng = np.random.default_rng(0)
XT, YT = rng.integers(0, 50, (64, 14)), rng.random((64, 1))
XV, YV = rng.integers(0, 50, (16, 11)), rng.random((16, 1))


class PredictAtEpochBegin(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.model.predict(XV[:4], verbose=0)


@pytest.mark.parametrize("how", ["validation_data", "callback"])
def test_fit_keeps_its_engine_when_other_lengths_run_in_between(how):
    keras.utils.set_random_seed(0)
    inp = keras.Input((None,), dtype="int32")
    emb, dense = layers.Embedding(50, 4), layers.Dense(1)
    model = keras.Model(inp, dense(layers.GlobalAveragePooling1D()(emb(inp))))
    model.compile(optimizer="adam", loss="mse")
    extra = {"validation_data": (XV, YV)} if how == "validation_data" else {"callbacks": [PredictAtEpochBegin()]}
    model.fit(XT, YT, epochs=3, batch_size=16, verbose=0, **extra)
    (table,), (kernel, bias) = emb.get_weights(), dense.get_weights()
    np.testing.assert_allclose(model.predict(XV, verbose=0), table[XV].mean(axis=1) @ kernel + bias, rtol=1e-5,
                               atol=1e-6)
    assert model._engine.weights is not None and int(model.optimizer.iterations) == 12
