"""A fit whose train_step is the script's (models/eager_fit.py) validates as tf.keras 3.15 does, through
evaluate with fit's callbacks: their test hooks run for every validation pass (they did not run at all)."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


def _hooks(k, tape, custom_step):
    calls = []

    class Record(k.callbacks.Callback):
        pass

    for name in ("on_epoch_begin", "on_epoch_end", "on_test_begin", "on_test_end", "on_test_batch_begin",
                 "on_test_batch_end", "on_train_batch_begin"):
        setattr(Record, name, lambda self, *a, _n=name, **kw: calls.append(_n))

    class Custom(k.Model):
        def train_step(self, data):
            x, y = data
            with tape() as t:
                loss = k.ops.mean(k.ops.square(self(x, training=True) - y))
            grads = t.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            return {"loss": loss}

    inputs = k.Input((3,))
    model = (Custom if custom_step else k.Model)(inputs, k.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((12, 3), "float32"), np.zeros((12, 1), "float32")
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, validation_data=(x[:8], y[:8]), callbacks=[Record()])
    return [c for c in calls if c != "on_train_batch_begin"]


@pytest.mark.parametrize("custom_step", [True, False])
def test_fit_callbacks_get_the_validation_test_hooks(custom_step):
    ours = _hooks(ff, ff.ops.tape.GradientTape, custom_step)
    theirs = _hooks(tf.keras, tf.GradientTape, custom_step)
    assert ours == theirs
    assert theirs.count("on_test_begin") == 2 and theirs.count("on_test_batch_end") == 4
