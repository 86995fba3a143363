"""BackupAndRestore: a fit interrupted after a backup and run again resumes at the right epoch with the
same weights and optimizer state (Adam slots, step count, dropout draws), so it ends exactly where the
uninterrupted fit ends; backups every N batches, double_checkpoint fallback, delete_checkpoint."""

import json
import os

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import callbacks

L = keras.layers
rng = np.random.default_rng(5)
X = rng.random((36, 5), dtype=np.float32)
Y = (X.sum(axis=1) > 2.5).astype("int64")
EPOCHS = 4


@pytest.fixture(autouse=True, scope="module")
def _one_processor():
    """One data-parallel processor: no strategy search (its measurements would dominate these tiny fits)."""
    keras.config.set(data_parallel_degree=1)
    yield
    keras.config.reset()


def _model():
    keras.utils.set_random_seed(3)
    m = keras.Sequential([keras.Input((5,)), L.Dense(8, activation="relu"), L.Dropout(0.25),
                          L.Dense(2, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(0.02), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


class Interrupt(Exception):
    pass


class StopAt(callbacks.Callback):
    """Raise at the start of epoch `epoch` (after batch `batch` of it when given)."""

    def __init__(self, epoch, batch=None):
        super().__init__()
        self.epoch, self.batch, self.now = epoch, batch, 0

    def on_epoch_begin(self, epoch, logs=None):
        self.now = epoch
        if epoch == self.epoch and self.batch is None:
            raise Interrupt

    def on_train_batch_end(self, batch, logs=None):
        if self.now == self.epoch and batch == self.batch:
            raise Interrupt


def _fit(m, cbs):
    return m.fit(X, Y, batch_size=12, epochs=EPOCHS, verbose=0, shuffle=False, callbacks=cbs)


@pytest.fixture(scope="module")
def reference():
    m = _model()
    w0 = m.get_weights()
    hist = _fit(m, [])
    return w0, m.get_weights(), hist.history["loss"], int(m.optimizer.iterations)


@pytest.mark.parametrize("save_freq,stop", [("epoch", StopAt(2)), (3, StopAt(2)), (2, StopAt(1, batch=2))],
                         ids=["epoch", "every-3-batches", "every-2-batches-mid-epoch"])
def test_interrupted_fit_resumes_where_the_backup_was_made(tmp_path, reference, save_freq, stop):
    w0, w_end, losses, _ = reference
    backup = tmp_path / "backup"
    m = _model()
    m.set_weights(w0)
    with pytest.raises(Interrupt):
        _fit(m, [callbacks.BackupAndRestore(backup, save_freq=save_freq), stop])
    meta = json.loads((backup / "training_metadata.json").read_text())
    resumed = _model()  # a fresh process would build the model again: other initial weights
    hist = _fit(resumed, [callbacks.BackupAndRestore(backup, save_freq=save_freq)])
    assert len(hist.history["loss"]) == EPOCHS - meta["epoch"]
    assert int(resumed.optimizer.iterations) == meta["iterations"] + (EPOCHS - meta["epoch"]) * 3  # 3 batches/epoch
    if meta["batch"] == 0:  # a backup at an epoch's end: the resumed run is the uninterrupted one
        np.testing.assert_allclose(hist.history["loss"], losses[meta["epoch"]:], rtol=1e-6)
        for a, b in zip(resumed.get_weights(), w_end, strict=True):
            np.testing.assert_array_equal(a, b)
    assert not backup.exists()  # delete_checkpoint=True after a complete fit


def test_mid_epoch_backup_restarts_that_epoch_with_its_weights(tmp_path, reference):
    w0 = reference[0]
    backup = tmp_path / "b"
    m = _model()
    m.set_weights(w0)
    with pytest.raises(Interrupt):
        _fit(m, [callbacks.BackupAndRestore(backup, save_freq=2), StopAt(2, batch=1)])
    meta = json.loads((backup / "training_metadata.json").read_text())
    assert meta["epoch"] == 2 and meta["batch"] == 1 and meta["iterations"] == 8
    restored = _model()
    cb = callbacks.BackupAndRestore(backup, save_freq=2, delete_checkpoint=False)
    cb.set_model(restored)
    cb.on_train_begin()
    assert restored._initial_epoch == 2 and int(restored.optimizer.iterations) == 8
    np.testing.assert_array_equal(restored.get_weights()[0], m.get_weights()[0])


def test_double_checkpoint_falls_back_and_delete_checkpoint_false_keeps_the_folder(tmp_path, reference):
    backup = tmp_path / "b"
    m = _model()
    with pytest.raises(Interrupt):
        _fit(m, [callbacks.BackupAndRestore(backup, double_checkpoint=True), StopAt(3)])
    meta = json.loads((backup / "training_metadata.json").read_text())
    assert meta["epoch"] == 3 and meta["previous_epoch"] == 2
    with open(backup / meta["checkpoint"] / "model.weights.h5", "wb") as f:
        f.write(b"damaged")
    resumed = _model()
    hist = _fit(resumed, [callbacks.BackupAndRestore(backup, double_checkpoint=True, delete_checkpoint=False)])
    assert len(hist.history["loss"]) == 2  # from the previous backup (end of epoch 2)
    assert backup.exists() and sorted(p for p in os.listdir(backup) if p.startswith("ckpt-"))


def test_argument_errors():
    with pytest.raises(ValueError, match="backup_dir"):
        callbacks.BackupAndRestore("")
    with pytest.raises(ValueError, match="save_freq"):
        callbacks.BackupAndRestore("x", save_freq="batch")
