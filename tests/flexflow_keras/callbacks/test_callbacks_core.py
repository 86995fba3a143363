"""Callback hooks, CallbackList, History, LearningRateScheduler, TerminateOnNaN, CSVLogger, LambdaCallback,
ModelCheckpoint and the monitor direction rules."""

import numpy as np
import pytest

from flexflow_keras import callbacks, metrics, optimizers


class FakeModel:
    def __init__(self):
        self.stop_training = False
        self.optimizer = optimizers.SGD(learning_rate=0.1)
        self.weights = [np.zeros(2)]
        self.saved = []
        self.metrics = [metrics.SparseCategoricalAccuracy(name="acc"), metrics.MeanSquaredError(name="mse")]

    def get_weights(self):
        return [w.copy() for w in self.weights]

    def set_weights(self, ws):
        self.weights = [w.copy() for w in ws]

    def save_weights(self, path, overwrite=True):
        self.saved.append(("weights", path))

    def save(self, path):
        self.saved.append(("model", path))


class Recorder(callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __getattribute__(self, name):
        if name.startswith("on_") and name != "on_batch_end":
            calls = object.__getattribute__(self, "calls")

            def hook(*args, **kwargs):
                calls.append(name)
                return object.__getattribute__(self, name)(*args, **kwargs)
            return hook
        return object.__getattribute__(self, name)

    def on_batch_end(self, batch, logs=None):
        self.calls.append("on_batch_end")


def _fit(cbs, model, epoch_logs, steps=2):
    cl = callbacks.CallbackList(cbs, add_history=True, model=model, verbose=0, epochs=len(epoch_logs), steps=steps)
    cl.on_train_begin()
    for epoch, logs in enumerate(epoch_logs):
        cl.on_epoch_begin(epoch)
        for b in range(steps):
            cl.on_train_batch_begin(b)
            cl.on_train_batch_end(b, {"loss": np.float32(logs.get("loss", 1.0))})
        cl.on_epoch_end(epoch, dict(logs))
        if model.stop_training:
            break
    cl.on_train_end()
    return cl


def test_callback_list_order_history_and_keras2_batch_hooks():
    model, rec = FakeModel(), Recorder()
    cl = _fit([rec], model, [{"loss": 2.0}, {"loss": 1.0}], steps=1)
    batch = ["on_train_batch_begin", "on_batch_begin", "on_train_batch_end", "on_batch_end"]
    assert rec.calls == (["on_train_begin", "on_epoch_begin"] + batch + ["on_epoch_end", "on_epoch_begin"] + batch
                         + ["on_epoch_end", "on_train_end"])
    assert model.history.history == {"loss": [2.0, 1.0]} and model.history.epoch == [0, 1]
    assert rec.params == {"verbose": 0, "epochs": 2, "steps": 1} and rec.model is model
    assert len(cl) == 2
    with pytest.raises(TypeError, match="Callback instances"):
        callbacks.CallbackList([lambda: None])


def test_logs_are_python_floats():
    seen = []
    cb = callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(type(logs["loss"])))
    _fit([cb], FakeModel(), [{"loss": 1.0}], steps=1)
    assert seen == [float]


def test_learning_rate_scheduler_both_signatures(capsys):
    model = FakeModel()
    _fit([callbacks.LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1), verbose=1)], model, [{}] * 3)
    assert model.optimizer.learning_rate == pytest.approx(0.1 / 3)
    assert "Epoch 3: LearningRateScheduler setting learning rate to 0.0333" in capsys.readouterr().out
    model = FakeModel()
    _fit([callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5)], model, [{}] * 3)
    assert model.optimizer.learning_rate == pytest.approx(0.0125)
    assert model.history.history["learning_rate"] == pytest.approx([0.05, 0.025, 0.0125])
    with pytest.raises(ValueError, match="should be a float"):
        _fit([callbacks.LearningRateScheduler(lambda epoch: "fast")], FakeModel(), [{}])


def test_terminate_on_nan(capsys):
    model = FakeModel()
    _fit([callbacks.TerminateOnNaN()], model, [{"loss": 1.0}, {"loss": float("nan")}, {"loss": 1.0}])
    assert model.stop_training and model.history.epoch == [0, 1]
    assert "Invalid loss, terminating training" in capsys.readouterr().out
    with pytest.raises(RuntimeError, match="NaN or Inf loss"):
        _fit([callbacks.TerminateOnNaN(raise_error=True)], FakeModel(), [{"loss": float("inf")}])


def test_lambda_callback_hooks():
    events = []
    cb = callbacks.LambdaCallback(on_train_begin=lambda logs: events.append("begin"),
                                  on_epoch_end=lambda e, logs: events.append(("epoch", e, logs["loss"])),
                                  on_batch_end=lambda b, logs: events.append("batch"))
    _fit([cb], FakeModel(), [{"loss": 3.0}], steps=2)
    assert events == ["begin", "batch", "batch", ("epoch", 0, 3.0)]


def test_csv_logger(tmp_path):
    path = tmp_path / "log.csv"
    _fit([callbacks.CSVLogger(path)], FakeModel(), [{"loss": 1.5, "acc": 0.5}, {"loss": 1.0, "acc": 0.75}])
    assert path.read_text().splitlines() == ["epoch,acc,loss,val_acc,val_loss", "0,0.5,1.5,NA,NA",
                                             "1,0.75,1.0,NA,NA"]
    _fit([callbacks.CSVLogger(path, append=True, separator=";")], FakeModel(), [{"loss": 0.5, "acc": 1.0}])
    assert path.read_text().splitlines()[-1] == "0;1.0;0.5;NA;NA"


def test_model_checkpoint_formats_and_best_only(tmp_path, capsys):
    model = FakeModel()
    pattern = str(tmp_path / "ck" / "w.{epoch:02d}-{val_loss:.2f}.weights.h5")
    cb = callbacks.ModelCheckpoint(pattern, save_best_only=True, save_weights_only=True, verbose=1)
    _fit([cb], model, [{"val_loss": 0.9}, {"val_loss": 1.2}, {"val_loss": 0.5}])
    assert model.saved == [("weights", str(tmp_path / "ck" / "w.01-0.90.weights.h5")),
                           ("weights", str(tmp_path / "ck" / "w.03-0.50.weights.h5"))]
    out = capsys.readouterr().out
    assert "Epoch 1: val_loss improved from None to 0.90000" in out
    assert "Epoch 2: val_loss did not improve from 0.90000" in out
    assert (tmp_path / "ck").is_dir()
    model = FakeModel()
    _fit([callbacks.ModelCheckpoint(str(tmp_path / "m{epoch}.keras"), save_freq=3)], model, [{}, {}], steps=2)
    assert model.saved == [("model", str(tmp_path / "m2.keras"))]
    with pytest.raises(KeyError, match="Available keys"):
        _fit([callbacks.ModelCheckpoint(str(tmp_path / "{nope}.keras"))], FakeModel(), [{}])
    with pytest.raises(ValueError, match="save_freq"):
        callbacks.ModelCheckpoint("x.keras", save_freq="batch")


def test_monitor_direction_rules():
    model = FakeModel()
    for monitor, direction in [("val_loss", "min"), ("out_loss", "min"), ("val_acc", "max"), ("mse", "min"),
                               ("val_top_k_categorical_accuracy", "max"), ("val_auc", "max")]:
        cb = callbacks.EarlyStopping(monitor=monitor)
        cb.set_model(model)
        assert cb._direction() == direction, monitor
    cb = callbacks.EarlyStopping(monitor="val_weird")
    cb.set_model(model)
    with pytest.raises(ValueError, match="mode='max'"):
        cb._direction()
    assert callbacks.EarlyStopping(monitor="val_weird", mode="max")._direction() == "max"
