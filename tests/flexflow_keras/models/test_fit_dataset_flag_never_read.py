"""-d given (command line or config.set) to a script that trains on arrays it made itself: nothing read -d,
so the flag had no effect and the log said only "arrays passed to fit()". That is an error naming -d and how
to use it; -d read first (a keras.datasets loader, a fit without data) and FF_DATASET (a default) are not."""

import sys

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, layers
from flexflow_keras.errors import ConfigError


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["pytest"])
    config.reset()
    config.set(cpus=1)
    yield
    config.reset()


def _model():
    model = keras.Sequential([keras.Input((784,)), layers.Dense(10, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return model


def _mnist_file(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "mnist.npz"
    np.savez(path, x_train=rng.integers(0, 255, (40, 28, 28), dtype=np.uint8),
             y_train=rng.integers(0, 10, 40).astype(np.uint8))
    return path


def _arrays():
    return np.zeros((8, 784), "float32"), np.zeros(8, "int64")


def test_arrays_of_the_scripts_own_with_an_unread_dataset_flag_are_an_error(tmp_path, monkeypatch):
    path = _mnist_file(tmp_path)
    monkeypatch.setattr(sys, "argv", ["train.py", "-d", str(path)])
    with pytest.raises(ConfigError, match=r"-d/--dataset .*mnist.npz is never read: fit\(\) received arrays .*"
                                          r"Drop -d to train on the script's data, or call fit\(\) without x and y"):
        _model().fit(*_arrays(), verbose=0)
    monkeypatch.setattr(sys, "argv", ["pytest"])
    config.set(dataset=str(path))
    with pytest.raises(ConfigError, match=r"config.set\(dataset=.*\) is never read"):
        _model().fit(*_arrays(), verbose=0)


def test_a_dataset_flag_read_by_a_loader_or_a_fit_without_data_is_used(tmp_path):
    path = _mnist_file(tmp_path)
    config.set(dataset=str(path))
    (x, y), _ = keras.datasets.mnist.load_data()
    _model().fit(x.reshape(-1, 784).astype("float32"), y, verbose=0, epochs=1)
    config.reset()
    config.set(cpus=1, dataset=str(path))
    model = _model()
    model.fit(verbose=0, epochs=1, batch_size=8)  # reads -d
    model.fit(*_arrays(), verbose=0)


def test_the_environment_default_is_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FF_DATASET", str(_mnist_file(tmp_path)))
    _model().fit(*_arrays(), verbose=0)


def test_a_dash_d_the_scripts_argparse_declares_is_the_scripts(tmp_path, monkeypatch):
    import argparse

    from flexflow_keras.utils import flag_checks

    flag_checks.watch_argparse()
    monkeypatch.setattr(flag_checks, "declared", set(flag_checks.declared))
    argparse.ArgumentParser().add_argument("-d", "--data-dir")
    monkeypatch.setattr(sys, "argv", ["train.py", "-d", str(tmp_path)])
    _model().fit(*_arrays(), verbose=0)
