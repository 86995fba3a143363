"""EarlyStopping and ReduceLROnPlateau against Keras 3 on the same sequences of epoch logs."""

import numpy as np
import pytest

pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from flexflow_keras import callbacks  # noqa: E402

pytestmark = pytest.mark.tf


class Opt:
    def __init__(self):
        self.learning_rate = 0.1


class Model:
    def __init__(self):
        self.stop_training = False
        self.optimizer = Opt()
        self.w = 0
        self.metrics = []

    def get_weights(self):
        return [np.array([self.w])]

    def set_weights(self, ws):
        self.w = int(ws[0][0])


def _drive(cb, values, key="val_loss"):
    model = Model()
    cb.set_model(model)
    cb.on_train_begin({})
    lrs, stopped = [], None
    for epoch, v in enumerate(values):
        model.w = epoch
        cb.on_epoch_begin(epoch, {})
        cb.on_epoch_end(epoch, {key: v})
        lrs.append(float(np.asarray(model.optimizer.learning_rate)))
        if model.stop_training:
            stopped = epoch
            break
    cb.on_train_end({})
    return stopped, model.w, lrs


LOSSES = [1.0, 0.8, 0.81, 0.79, 0.795, 0.9, 0.7, 0.71, 0.72, 0.73, 0.74, 0.6]
ACCS = [0.5, 0.6, 0.6, 0.61, 0.58, 0.7, 0.69, 0.69, 0.71, 0.7, 0.7, 0.7]


@pytest.mark.parametrize("kwargs", [
    dict(patience=0), dict(patience=2), dict(patience=2, min_delta=0.02), dict(patience=1, baseline=0.75),
    dict(patience=2, restore_best_weights=True), dict(patience=1, start_from_epoch=4),
    dict(monitor="val_acc", mode="max", patience=2), dict(monitor="val_acc", mode="max", patience=1,
                                                         restore_best_weights=True, min_delta=0.005),
])
def test_early_stopping_matches_keras(kwargs):
    key = kwargs.get("monitor", "val_loss")
    values = ACCS if key == "val_acc" else LOSSES
    ours = _drive(callbacks.EarlyStopping(**kwargs), values, key)
    theirs = _drive(keras.callbacks.EarlyStopping(**kwargs), values, key)
    assert ours == theirs


@pytest.mark.parametrize("kwargs", [
    dict(patience=1), dict(patience=2, factor=0.5), dict(patience=1, cooldown=2, min_lr=0.002),
    dict(patience=1, min_delta=0.05, factor=0.2), dict(monitor="val_acc", mode="max", patience=1),
])
def test_reduce_lr_on_plateau_matches_keras(kwargs):
    key = kwargs.get("monitor", "val_loss")
    values = ACCS if key == "val_acc" else LOSSES
    ours = _drive(callbacks.ReduceLROnPlateau(**kwargs), values, key)
    theirs = _drive(keras.callbacks.ReduceLROnPlateau(**kwargs), values, key)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)
