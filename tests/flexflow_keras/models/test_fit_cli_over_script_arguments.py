"""Command-line flags win over the script's fit() arguments, and the log says so once: -e over epochs= (it was
logged twice per fit), and -p over verbose=0 (its progress lines were silently dropped)."""

import sys

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, layers


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    config.reset()
    config.set(cpus=1)
    yield
    config.reset()


def _fit(verbose):
    model = keras.Sequential([keras.Input((4,)), layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return model.fit(np.zeros((32, 4), "float32"), np.zeros(32, "int64"), batch_size=8, epochs=3, verbose=verbose)


def test_an_epochs_override_is_logged_once(monkeypatch, caplog):
    monkeypatch.setattr(sys, "argv", ["train.py", "-e", "1"])
    with caplog.at_level("INFO", logger="flexflow_keras"):
        history = _fit(0)
    assert len(history.history["loss"]) == 1
    assert caplog.text.count("-e/--epochs 1 on the command line overrides the script's epochs=3") == 1


def test_print_freq_on_the_command_line_wins_over_verbose_0(monkeypatch, caplog, capsys):
    monkeypatch.setattr(sys, "argv", ["train.py", "-p", "2"])
    with caplog.at_level("INFO", logger="flexflow_keras"):
        _fit(0)
    out = capsys.readouterr().out
    assert "-p/--print-freq 2 on the command line overrides the script's verbose=0" in caplog.text
    assert [line.split(" (")[0] for line in out.splitlines() if line.startswith("iter ")] == [
        f"iter {i}/12" for i in range(2, 13, 2)]
    assert "Training:" not in out  # verbose=0 still has no summary


def test_verbose_0_without_the_flag_stays_silent(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["train.py"])
    _fit(0)
    assert capsys.readouterr().out == ""


def test_print_freq_wins_over_verbose_0_in_a_custom_train_step_fit(monkeypatch, caplog, capsys):
    # a model whose train_step is the script's trains through models/eager_fit.py: the same rule
    class Custom(keras.Model):
        def train_step(self, data):
            x, y = data
            with keras.ops.tape.GradientTape() as tape:
                loss = keras.ops.mean(keras.ops.square(self(x) - y))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            return {"loss": loss}

    inputs = keras.Input((4,))
    model = Custom(inputs, layers.Dense(2)(inputs))
    model.compile(optimizer="sgd")
    monkeypatch.setattr(sys, "argv", ["train.py", "-p", "2"])
    with caplog.at_level("INFO", logger="flexflow_keras"):
        model.fit(np.zeros((32, 4), "float32"), np.zeros((32, 2), "float32"), batch_size=8, epochs=3, verbose=0)
    assert "-p/--print-freq 2 on the command line overrides the script's verbose=0" in caplog.text
    assert [line.split(" (")[0] for line in capsys.readouterr().out.splitlines() if line.startswith("iter ")] == [
        f"iter {i}/12" for i in range(2, 13, 2)]
