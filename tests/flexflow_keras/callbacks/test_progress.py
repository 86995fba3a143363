"""The progress display's text: Keras' per-epoch lines, the terminal bar, FlexFlow's -p lines and the
end-of-fit throughput."""

import io
import re

import pytest

from flexflow_keras import callbacks
from flexflow_keras.callbacks.progress import FlexFlowLogger, Progbar, ProgbarLogger, ProgressWriter


@pytest.fixture(autouse=True)
def _script_argv(monkeypatch):
    # The display reads -p from the command line; pytest's own argv (-p plugin) is not a script's.
    monkeypatch.setattr("sys.argv", ["train.py"])


class TTY(io.StringIO):
    def isatty(self):
        return True


def _run(cbs, epochs=2, steps=4, batch_size=32, samples=None, verbose=1):
    model = type("M", (), {"stop_training": False})()
    params = dict(verbose=verbose, epochs=epochs, steps=steps)
    if samples:
        params["samples"] = samples
    cl = callbacks.CallbackList(cbs, model=model, **params)
    cl.on_train_begin()
    for e in range(epochs):
        cl.on_epoch_begin(e)
        for b in range(steps):
            cl.on_train_batch_begin(b)
            cl.on_train_batch_end(b, {"loss": 1.0 / (b + 1 + e), "accuracy": 0.25 * (b + 1)})
        cl.on_epoch_end(e, {"loss": 0.5 - 0.1 * e, "accuracy": 0.75, "val_loss": 0.6, "val_accuracy": 0.7})
    cl.on_train_end()


def test_plain_lines_one_per_epoch_when_not_a_terminal():
    out = io.StringIO()
    _run([ProgbarLogger(ProgressWriter(out))])
    lines = out.getvalue().splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2" and len(lines) == 4
    # Keras 3's CallbackList hands every hook its logs sorted by name (pythonify_logs)
    assert re.fullmatch(r"4/4 - \d+s - \d+[mu]?s/step - accuracy: 0\.7500 - loss: 0\.5000 - val_accuracy: 0\.7000 - "
                        r"val_loss: 0\.6000", lines[1]), lines[1]
    assert "loss: 0.4000" in lines[3]
    assert "\x1b" not in out.getvalue() and "\r" not in out.getvalue()


def test_verbose_2_is_one_line_per_epoch():
    out = io.StringIO()
    _run([ProgbarLogger(ProgressWriter(TTY()))], verbose=0)  # silent
    _run([ProgbarLogger(ProgressWriter(out))], verbose=2, epochs=1)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("4/4 - ")


def test_terminal_bar_redraws_in_place():
    out = TTY()
    logger = ProgbarLogger(ProgressWriter(out))
    _run([logger], epochs=1, steps=3)
    text = out.getvalue()
    assert "\r" in text and "━" in text and "\x1b[1m3/3\x1b[0m" in text
    assert text.endswith("\n") and text.count("\n") == 1
    final = text.split("\r")[-1]
    assert "val_accuracy: 0.7000" in final and "ms/step" in final or "us/step" in final


def test_progbar_values_format_like_keras():
    out = io.StringIO()
    bar = Progbar(2, verbose=2, writer=ProgressWriter(out))
    bar.update(1, [("loss", 0.12345)])
    bar.update(2, [("loss", 0.0001234), ("mae", 2.5)])
    assert re.fullmatch(r"2/2 - \d+s - \d+[mu]?s/step - loss: 1\.2340e-04 - mae: 2\.5000\n", out.getvalue())


def test_print_frequency_lines_and_summary():
    out = io.StringIO()
    _run([FlexFlowLogger(print_freq=3, batch_size=32, writer=ProgressWriter(out))], epochs=2, steps=4,
         samples=100)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert re.fullmatch(r"iter 3/8 \(epoch 1/2, step 3/4\) - accuracy: 0\.7500 - loss: 0\.3333 - [\d.]+ samples/s",
                        lines[0]), lines[0]
    assert lines[1].startswith("iter 6/8 (epoch 2/2, step 2/4)")
    # 4 steps of 32, 32, 32, 4 samples per epoch (100 samples)
    assert re.fullmatch(r"Training: 2 epoch\(s\), 8 iterations, 200 samples in [\d.]+s - [\d.]+ samples/s",
                        lines[2]), lines[2]


def test_print_frequency_on_a_terminal_needs_the_flag(monkeypatch):
    out = TTY()
    _run([FlexFlowLogger(print_freq=2, batch_size=8, writer=ProgressWriter(out))], epochs=1)
    assert "iter " not in out.getvalue() and "Training: 1 epoch(s)" in out.getvalue()
    monkeypatch.setattr("sys.argv", ["train.py", "-p", "2"])
    out = TTY()
    _run([FlexFlowLogger(print_freq=2, batch_size=8, writer=ProgressWriter(out))], epochs=1)
    assert out.getvalue().count("iter ") == 2


def test_permanent_line_while_the_bar_is_up():
    out = TTY()
    w = ProgressWriter(out)
    w.status("1/4 ━━", 6)
    w.line("iter 1")
    assert out.getvalue() == "\r1/4 ━━\riter 1\n1/4 ━━"
    w.end_status()
    assert out.getvalue().endswith("\n")


@pytest.mark.parametrize("verbose", [1, 2])
def test_fit_style_callback_list_writes_to_stdout(capsys, verbose):
    cl = callbacks.CallbackList([], add_progbar=True, model=None, verbose=verbose, epochs=1, steps=2)
    cl.append_flexflow_logger(10, 16)
    cl.on_train_begin()
    cl.on_epoch_begin(0)
    for b in range(2):
        cl.on_train_batch_end(b, {"loss": 0.5})
    cl.on_epoch_end(0, {"loss": 0.5})
    cl.on_train_end()
    out = capsys.readouterr().out
    assert "2/2 - " in out and "loss: 0.5000" in out and "Training: 1 epoch(s), 2 iterations, 32 samples" in out


def test_status_padding_counts_visible_characters_only():
    out = TTY()
    w = ProgressWriter(out)
    w.status("\x1b[1m10/10\x1b[0m long", 10)
    w.status("\x1b[1m1/10\x1b[0m", 4)
    assert out.getvalue().endswith("\r\x1b[1m1/10\x1b[0m" + " " * 6)


def test_a_slow_step_line_is_printed_only_where_fit_read_its_logs(monkeypatch):
    """needs_batch_logs said no (4.9 s since the last line), then 0.2 s passed before the batch ended: the
    line would carry an earlier read's values, so none is printed for that batch."""
    from flexflow_keras.callbacks import progress

    clock = [0.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])
    out = io.StringIO()
    logger = FlexFlowLogger(print_freq=100, batch_size=8, writer=ProgressWriter(out))
    logger.set_params(dict(verbose=1, epochs=1, steps=4))
    logger.on_train_begin()
    logger.on_epoch_begin(0)
    clock[0] = 4.9
    assert not logger.needs_batch_logs(0)
    clock[0] = 5.1
    logger.on_train_batch_end(0, {"loss": 9.0})
    assert "iter " not in out.getvalue()
    clock[0] = 10.3
    assert logger.needs_batch_logs(1)
    logger.on_train_batch_end(1, {"loss": 0.5})
    assert out.getvalue().count("iter ") == 1 and "loss: 0.5000" in out.getvalue()


def test_the_summary_counts_what_fit_trained_on_past_one_pass_of_the_data(capsys):
    """steps_per_epoch beyond one pass of a repeating generator (ImageDataGenerator.flow): every step's
    samples count, not one pass's (the summary said 300 samples for 3000)."""
    import numpy as np

    import flexflow_keras as keras

    x, y = np.random.rand(300, 4).astype("float32"), np.random.randint(0, 3, 300)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")

    def batches():
        while True:
            for i in range(0, 300, 30):
                yield x[i:i + 30], y[i:i + 30]

    model.fit(batches(), steps_per_epoch=25, epochs=1, verbose=2)
    assert "Training: 1 epoch(s), 25 iterations, 750 samples" in capsys.readouterr().out
