"""What the progress display adds on its own: ' - data: synthetic' on every epoch and iter line while
fit trains on synthetic data, and a line for every step slower than SLOW_STEP_SECONDS whatever -p says."""

import io

import pytest

from flexflow_keras import callbacks
from flexflow_keras.callbacks import progress
from flexflow_keras.callbacks.progress import FlexFlowLogger, ProgbarLogger, ProgressWriter


@pytest.fixture(autouse=True)
def _script_argv(monkeypatch):
    monkeypatch.setattr("sys.argv", ["train.py"])


class TTY(io.StringIO):
    def isatty(self):
        return True


def _run(cbs, epochs=2, steps=4, **params):
    model = type("M", (), {"stop_training": False})()
    cl = callbacks.CallbackList(cbs, model=model, verbose=params.pop("verbose", 1), epochs=epochs, steps=steps,
                                **params)
    cl.on_train_begin()
    for e in range(epochs):
        cl.on_epoch_begin(e)
        for b in range(steps):
            cl.on_train_batch_begin(b)
            cl.on_train_batch_end(b, {"loss": 0.5, "accuracy": 0.5})
        cl.on_epoch_end(e, {"loss": 0.5, "accuracy": 0.75})
    cl.on_train_end()


@pytest.mark.parametrize("writer", [io.StringIO, TTY])
def test_every_epoch_line_says_synthetic(writer):
    out = writer()
    _run([ProgbarLogger(ProgressWriter(out))], data="synthetic")
    finals = [s.split("\r")[-1] for s in out.getvalue().splitlines() if "accuracy: 0.7500" in s]
    assert len(finals) == 2 and all(s.endswith(" - data: synthetic") for s in finals), out.getvalue()


def test_iter_lines_say_synthetic_and_real_data_says_nothing():
    out = io.StringIO()
    _run([FlexFlowLogger(print_freq=2, batch_size=8, writer=ProgressWriter(out))], data="synthetic")
    iters = [s for s in out.getvalue().splitlines() if s.startswith("iter ")]
    assert len(iters) == 4 and all(s.endswith(" - data: synthetic") for s in iters)
    out = io.StringIO()
    _run([ProgbarLogger(ProgressWriter(out)), FlexFlowLogger(print_freq=2, batch_size=8, writer=ProgressWriter(out))],
         data=None)
    assert "data:" not in out.getvalue() and out.getvalue().count("iter ") == 4


def test_slow_steps_get_a_line_each(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(progress, "SLOW_STEP_SECONDS", 0.0)  # every step counts as slow
    _run([FlexFlowLogger(print_freq=1000, batch_size=8, writer=ProgressWriter(out))], epochs=1, steps=3)
    assert [s.split(" (")[0] for s in out.getvalue().splitlines() if s.startswith("iter ")] == \
        ["iter 1/3", "iter 2/3", "iter 3/3"]
    out = io.StringIO()
    monkeypatch.setattr(progress, "SLOW_STEP_SECONDS", 3600.0)
    _run([FlexFlowLogger(print_freq=1000, batch_size=8, writer=ProgressWriter(out))], epochs=1, steps=3)
    assert "iter " not in out.getvalue()
