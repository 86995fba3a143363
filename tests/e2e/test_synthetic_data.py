"""Synthetic data from the command line: learnable but clearly short of perfect, and every epoch line and
iter line says `data: synthetic` while it is; real data says nothing."""

import io
import os
import re
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np

import flexflow_keras as keras
from flexflow_keras import layers

ROOT = Path(__file__).resolve().parents[2]


def test_mnist_mlp_on_synthetic_data_is_good_not_perfect_and_says_so(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), FF_CACHE_DIR=str(tmp_path / "cache"), FF_LOG_LEVEL="INFO",
               PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "mnist_mlp.py"), "-e", "1", "-p", "200",
                           "--only-data-parallel"], capture_output=True, text=True, timeout=600, env=env,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    acc = float(re.search(r"test accuracy ([\d.]+)", proc.stdout).group(1))
    assert 0.8 < acc < 0.97, proc.stdout[-2000:]  # learnable, but 8% of the samples show another class
    epoch = [s for s in proc.stdout.splitlines() if s.startswith("938/938")]
    iters = [s for s in proc.stdout.splitlines() if s.startswith("iter ")]
    assert len(epoch) == 1 and epoch[0].endswith(" - data: synthetic"), proc.stdout[-2000:]
    assert len(iters) == 4 and all(s.endswith(" - data: synthetic") for s in iters), iters


def _model():
    m = keras.Sequential([keras.Input(shape=(6,)), layers.Dense(8, activation="relu"),
                          layers.Dense(3, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def test_fit_without_data_says_synthetic_on_each_epoch_and_arrays_do_not(monkeypatch):
    monkeypatch.setattr("sys.argv", ["train.py"])
    out = io.StringIO()
    with redirect_stdout(out):
        _model().fit(epochs=2, batch_size=16, verbose=2)
    lines = [s for s in out.getvalue().splitlines() if " - loss: " in s]
    assert len(lines) == 2 and all(s.endswith(" - data: synthetic") for s in lines), out.getvalue()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 6)).astype("float32")
    y = rng.integers(0, 3, 64)
    out = io.StringIO()
    with redirect_stdout(out):
        _model().fit(x, y, epochs=2, batch_size=16, verbose=2)
    assert out.getvalue().count(" - loss: ") == 2 and "data:" not in out.getvalue()
