"""ModelCheckpoint on real models: every Keras 3 argument, the files it writes load back, and its
argument checks say what to change."""

import logging
import os

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import callbacks

L = keras.layers
rng = np.random.default_rng(1)
X = rng.random((48, 6), dtype=np.float32)
Y = (X.sum(axis=1) > 3).astype("int64")


def model():
    m = keras.Sequential([keras.Input((6,)), L.Dense(8, activation="relu"), L.Dense(2, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(0.05), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def fit(m, cbs, epochs=3, **kwargs):
    return m.fit(X[:32], Y[:32], batch_size=8, epochs=epochs, verbose=0, callbacks=cbs,
                 validation_data=(X[32:], Y[32:]), shuffle=False, **kwargs)


def test_default_arguments_save_the_whole_model_every_epoch(tmp_path):
    m = model()
    path = tmp_path / "ck.keras"
    fit(m, [callbacks.ModelCheckpoint(path)], epochs=2)
    loaded = keras.models.load_model(path)
    for p, q in zip(m.get_weights(), loaded.get_weights(), strict=True):
        np.testing.assert_array_equal(p, q)
    assert loaded.optimizer.iterations == m.optimizer.iterations == 8


def test_epoch_and_log_templates_name_one_file_per_epoch(tmp_path):
    m = model()
    pattern = str(tmp_path / "run" / "m-{epoch:02d}-{val_loss:.2f}.keras")
    history = fit(m, [callbacks.ModelCheckpoint(pattern)], epochs=3)
    expected = sorted(f"m-{e + 1:02d}-{v:.2f}.keras" for e, v in enumerate(history.history["val_loss"]))
    assert sorted(os.listdir(tmp_path / "run")) == expected
    keras.models.load_model(tmp_path / "run" / expected[-1])


def test_save_weights_only(tmp_path):
    m = model()
    fit(m, [callbacks.ModelCheckpoint(tmp_path / "w{epoch}.weights.h5", save_weights_only=True)], epochs=2)
    assert sorted(os.listdir(tmp_path)) == ["w1.weights.h5", "w2.weights.h5"]
    fresh = model()
    fresh.load_weights(tmp_path / "w2.weights.h5")
    for p, q in zip(m.get_weights(), fresh.get_weights(), strict=True):
        np.testing.assert_array_equal(p, q)


def _saved_epochs(tmp_path, cb, val_losses=None):
    """Run `cb`'s epoch hooks with the given logs; the epochs (1-based) whose file was written."""
    m = model()
    m.build((None, 6))
    cb.set_model(m)
    cb.on_train_begin()
    saved = []
    for epoch, logs in enumerate(val_losses):
        cb.on_epoch_begin(epoch)
        before = set(os.listdir(tmp_path))
        cb.on_epoch_end(epoch, logs)
        if set(os.listdir(tmp_path)) - before:
            saved.append(epoch + 1)
    return saved


def test_save_best_only_modes_and_threshold(tmp_path):
    logs = [{"val_loss": 0.9, "val_accuracy": 0.5}, {"val_loss": 1.2, "val_accuracy": 0.7},
            {"val_loss": 0.5, "val_accuracy": 0.6}]
    pattern = str(tmp_path / "{epoch}.keras")
    assert _saved_epochs(tmp_path, callbacks.ModelCheckpoint(pattern, save_best_only=True), logs) == [1, 3]
    for f in os.listdir(tmp_path):
        os.remove(tmp_path / f)
    cb = callbacks.ModelCheckpoint(pattern, monitor="val_accuracy", save_best_only=True)  # auto: max
    assert _saved_epochs(tmp_path, cb, logs) == [1, 2]
    for f in os.listdir(tmp_path):
        os.remove(tmp_path / f)
    cb = callbacks.ModelCheckpoint(pattern, monitor="val_loss", mode="max", save_best_only=True)
    assert _saved_epochs(tmp_path, cb, logs) == [1, 2]
    for f in os.listdir(tmp_path):
        os.remove(tmp_path / f)
    cb = callbacks.ModelCheckpoint(pattern, save_best_only=True, initial_value_threshold=0.6)
    assert _saved_epochs(tmp_path, cb, logs) == [3]


def test_save_best_only_without_the_monitored_value_warns_and_saves(tmp_path, caplog):
    cb = callbacks.ModelCheckpoint(str(tmp_path / "{epoch}.keras"), monitor="val_auc", save_best_only=True)
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        assert _saved_epochs(tmp_path, cb, [{"val_loss": 1.0}]) == [1]
    assert "Can save best model only with val_auc available" in caplog.text


def test_unknown_mode_falls_back_to_auto(caplog):
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        cb = callbacks.ModelCheckpoint("x.keras", mode="bigger")
    assert cb.mode == "auto" and "mode 'bigger' is unknown" in caplog.text


def test_save_freq_in_batches(tmp_path):
    m = model()
    pattern = str(tmp_path / "e{epoch}-b{batch}.keras")
    fit(m, [callbacks.ModelCheckpoint(pattern, save_freq=3)], epochs=2)  # 4 batches per epoch
    assert sorted(os.listdir(tmp_path)) == ["e1-b3.keras", "e2-b2.keras"]
    keras.models.load_model(tmp_path / "e2-b2.keras")


def test_verbose_lines(tmp_path, capsys):
    m = model()
    fit(m, [callbacks.ModelCheckpoint(tmp_path / "best.keras", save_best_only=True, verbose=1,
                                      initial_value_threshold=-1.0)], epochs=1)
    out = capsys.readouterr().out
    assert "Epoch 1: val_loss did not improve from -1.00000" in out
    fit(m, [callbacks.ModelCheckpoint(tmp_path / "m.keras", verbose=1)], epochs=1)
    out = capsys.readouterr().out
    assert f"Epoch 1: saving model to {tmp_path / 'm.keras'}" in out
    assert f"Epoch 1: finished saving model to {tmp_path / 'm.keras'}" in out


def test_argument_errors_say_what_to_change(tmp_path):
    with pytest.raises(ValueError, match=r"must end in `\.keras`.*; received filepath='m\.weights\.h5'.*"
                                         r"save_weights_only=True"):
        callbacks.ModelCheckpoint("m.weights.h5")
    with pytest.raises(ValueError, match=r"must end in `\.keras` \(or `\.h5` for Keras' legacy HDF5 file\); "
                                         r"received filepath='m\.ckpt'"):
        callbacks.ModelCheckpoint("m.ckpt")
    with pytest.raises(ValueError, match=r"save_weights_only=True\) .*must end in `\.weights\.h5`; received "
                                         r"filepath='m\.keras'"):
        callbacks.ModelCheckpoint("m.keras", save_weights_only=True)
    for bad in ("batch", 0, -2, 1.5, True):
        with pytest.raises(ValueError, match="Unrecognized save_freq"):
            callbacks.ModelCheckpoint("m.keras", save_freq=bad)
    m = model()
    with pytest.raises(KeyError, match=r"Failed to format.*Available keys: epoch, .*val_loss"):
        fit(m, [callbacks.ModelCheckpoint(str(tmp_path / "{nope}.keras"))], epochs=1)
    (tmp_path / "dir.keras").mkdir()
    with pytest.raises(IsADirectoryError, match="is an existing directory"):
        fit(m, [callbacks.ModelCheckpoint(tmp_path / "dir.keras")], epochs=1)


def test_a_legacy_h5_path_checkpoints_the_whole_compiled_model(tmp_path):
    # Keras 2 scripts checkpoint to "best.h5" (save_weights_only=False); Keras 3 writes its legacy file
    pytest.importorskip("h5py")
    m = model()
    fit(m, [callbacks.ModelCheckpoint(str(tmp_path / "last.h5"))], epochs=2)
    back = keras.models.load_model(tmp_path / "last.h5")
    assert back.compiled and type(back.optimizer).__name__ == "Adam"
    np.testing.assert_allclose(back.predict(X[32:], verbose=0), m.predict(X[32:], verbose=0), rtol=1e-6)
    assert set(back.evaluate(X[32:], Y[32:], verbose=0, return_dict=True)) == {"loss", "accuracy"}


def test_a_template_key_the_logs_lack_is_a_keyerror_with_one_clean_message(tmp_path):
    """'{val_acc}' where metrics=['accuracy'] logs val_accuracy: a KeyError as in Keras (scripts catch it)
    and a framework error, whose text lists the keys there are, without a KeyError's quotes."""
    from flexflow_keras.errors import FlexFlowKerasError

    cb = callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch:02d}-{val_acc:.2f}.keras"))
    with pytest.raises(KeyError) as info:
        fit(model(), [cb], epochs=1)
    assert isinstance(info.value, FlexFlowKerasError)
    assert str(info.value).startswith('Failed to format this callback filepath: "') and "val_accuracy" in str(info.value)
