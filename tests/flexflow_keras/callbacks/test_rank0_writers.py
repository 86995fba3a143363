"""Under MPI, callbacks that only write files (CSVLogger, TensorBoard) run on rank 0 alone."""

from types import SimpleNamespace

import pytest

from flexflow_keras import callbacks
from flexflow_keras.callbacks.callback_list import CallbackList
from flexflow_keras.execution import distributed


@pytest.mark.parametrize("rank", [0, 1, None])
def test_file_writers_run_on_rank0_only(monkeypatch, tmp_path, rank):
    monkeypatch.setattr(distributed, "world", lambda: None if rank is None else SimpleNamespace(rank=rank))
    csv = callbacks.CSVLogger(str(tmp_path / "log.csv"))
    stop = callbacks.EarlyStopping()
    kept = CallbackList([csv, stop]).callbacks
    assert stop in kept
    assert (csv in kept) == (rank != 1)


def test_backup_and_restore_writes_on_rank0_only(monkeypatch, tmp_path):
    import numpy as np

    import flexflow_keras as keras
    from flexflow_keras.callbacks import backup_and_restore

    barriers = []
    monkeypatch.setattr(backup_and_restore, "_world", lambda: SimpleNamespace(rank=1, barrier=lambda: barriers.append(1)))
    monkeypatch.setattr(distributed, "on_rank0", lambda fn, *a, **k: barriers.append("weights"))  # rank 1: no write
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.zeros((4, 3), np.float32), np.zeros((4, 2), np.float32), epochs=1, verbose=0)
    cb = callbacks.BackupAndRestore(str(tmp_path / "backup"), delete_checkpoint=False)
    cb.set_model(model)
    cb.on_epoch_end(0)
    assert not (tmp_path / "backup").exists() and barriers == ["weights", 1]
