"""The progress display: Keras 3's progress bar on a terminal, plain lines otherwise, and FlexFlow's
``-p N`` print-frequency lines with throughput.

Everything goes to ``sys.stdout`` (looked up at each write, so redirection works) through one
`ProgressWriter`, which knows whether a status line (the bar) is showing: a permanent line printed
while the bar is up replaces it and the bar is drawn again below. After
``keras.utils.disable_interactive_logging()`` the lines go to the ``flexflow_keras`` logger instead (INFO),
as Keras 3 sends them to absl logging, and no bar is drawn.

Modes (verbose as in Keras):
- 0: silent.
- 1 on a terminal: Keras 3's bar, redrawn in place (at most every 0.05 s), ETA while running, the
  epoch's time and time per step when done.
- 1 not on a terminal, and 2: one line per epoch, ``938/938 - 5s - 5ms/step - loss: 0.2961 - ...``.
- FlexFlow's print frequency (`FlexFlowLogger`): every N training iterations a line
  ``iter 20/1876 (epoch 1/2, step 20/938) - loss: 0.5123 - accuracy: 0.8601 - 10342.1 samples/s``;
  on by default when stdout is not a terminal (verbose=1), and on a terminal when ``-p`` was given
  on the command line. At the end of fit (any verbose > 0) one line with the elapsed time and the
  training throughput.
"""

from __future__ import annotations

import logging
import math
import sys
import time

from flexflow_keras.callbacks.callback import Callback


class ProgressWriter:
    """Writes progress text to sys.stdout; tracks an in-place status line on terminals.

    Args:
        stream: a text stream; None means the current ``sys.stdout`` at each write.
    """

    def __init__(self, stream=None):
        self._stream = stream
        self._status = ""  # the status line currently shown (terminal only)
        self._status_width = 0  # its width on screen (without ANSI escapes)
        self._pending = ""  # the start of a line not yet logged (interactive logging off)

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stdout

    def isatty(self) -> bool:
        if not _interactive[0]:
            return False
        isatty = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty()) if isatty is not None else False
        except ValueError:  # a closed stream
            return False

    def write(self, text: str) -> None:
        if not _interactive[0]:
            *lines, self._pending = (self._pending + text.replace("\r", "\n")).split("\n")
            for line in lines:
                if line.strip():
                    logging.getLogger("flexflow_keras").info(line.rstrip())
            return
        self.stream.write(text)
        self.stream.flush()

    def status(self, text: str, visible_width: int) -> None:
        """Show `text` as the in-place status line (terminal)."""
        pad = max(0, self._status_width - visible_width) if self._status else 0
        self.write("\r" + text + " " * pad)
        self._status, self._status_width = text, visible_width

    def end_status(self, text: str | None = None, visible_width: int = 0) -> None:
        """Finish the status line (optionally with final text) and move to a new line."""
        if text is not None:
            self.status(text, visible_width)
        if self._status:
            self.write("\n")
        self._status, self._status_width = "", 0

    def line(self, text: str) -> None:
        """A permanent line; a status line in progress is replaced and shown again below it."""
        if self._status:
            status, width = self._status, self._status_width
            pad = max(0, width - len(text))
            self.write("\r" + text + " " * pad + "\n" + status)
        else:
            self.write(text + "\n")


_WRITER = ProgressWriter()

# A training step this slow (the CUDA simulator, a huge model) gets its own line whatever -p says, so
# the display shows steps as they complete instead of looking hung.
SLOW_STEP_SECONDS = 5.0


def data_note(params) -> str:
    """' - data: synthetic' when fit's params say the training data is synthetic, else ''."""
    return f" - data: {params['data']}" if params and params.get("data") else ""


_interactive = [True]


def enable_interactive_logging() -> None:
    """Progress output to stdout, with the in-place bar on a terminal (the default)."""
    _interactive[0] = True


def disable_interactive_logging() -> None:
    """Progress output as log records of the ``flexflow_keras`` logger (INFO), one per line, no bar."""
    _interactive[0] = False


def is_interactive_logging_enabled() -> bool:
    return _interactive[0]


def default_writer() -> ProgressWriter:
    """The process-wide writer on sys.stdout."""
    return _WRITER


def format_value(v, verbose: int = 1) -> str:
    """A metric value as Keras prints it (.4f, or .4e for small values)."""
    try:
        v = float(v)
    except (TypeError, ValueError):
        return f" {v}"
    small = abs(v) <= 1e-3 if verbose == 1 else v <= 1e-3
    return f" {v:.4e}" if small else f" {v:.4f}"


def format_time_per_unit(seconds: float, unit: str = "step") -> str:
    """Keras' duration format: ' 5s/step', ' 12ms/step' or ' 80us/step'."""
    if seconds >= 1 or seconds == 0:
        return f" {seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f" {seconds * 1e3:.0f}ms/{unit}"
    return f" {seconds * 1e6:.0f}us/{unit}"


def format_logs(logs: dict, verbose: int = 1, skip=("size", "batch", "outputs")) -> str:
    return "".join(f" - {k}:{format_value(v, verbose)}" for k, v in logs.items() if k not in skip)


class Progbar:
    """Keras 3's progress bar (`keras.utils.Progbar`'s display), writing through a `ProgressWriter`.

    Args:
        target: total steps, or None if unknown.
        width: bar width in characters.
        verbose: 1 (bar, or one line when not on a terminal) or 2 (one line when done).
        interval: minimum seconds between redraws.
        unit_name: "step" or "sample".
        writer: a `ProgressWriter` (default: sys.stdout).
        dynamic: draw in place; default: whether stdout is a terminal.
    """

    def __init__(self, target, width=20, verbose=1, interval=0.05, unit_name="step", writer=None, dynamic=None):
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        self.writer = writer or default_writer()
        self.dynamic = self.writer.isatty() if dynamic is None else dynamic
        self._values: dict = {}
        self._start = time.time()
        self._last_update = 0.0
        self._time_after_first_step = None
        self._seen = 0
        self.suffix = ""  # appended to the final line (" - data: synthetic" while training on it)

    def _step_duration(self, current: int, now: float) -> float:
        # Like Keras: ignore the first (warm-up) step once more steps are done.
        if not current:
            return 0.0
        if self._time_after_first_step is not None and current > 1:
            per = (now - self._time_after_first_step) / (current - 1)
        else:
            per = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return per

    def update(self, current: int, values=None, finalize: bool | None = None) -> None:
        """Show progress at step `current` with ``values`` (name -> value, shown as is)."""
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        for k, v in (values.items() if isinstance(values, dict) else (values or [])):
            self._values[k] = v
        self._seen = current
        now = time.time()
        per_unit = self._step_duration(current, now)
        if self.verbose == 1 and self.dynamic:
            if now - self._last_update < self.interval and not finalize:
                return
            self._draw(current, now, per_unit, finalize)
        elif (self.verbose == 2 or self.verbose == 1) and finalize:
            self.writer.line(self._plain_line(current, now, per_unit))
        self._last_update = now

    def _draw(self, current: int, now: float, per_unit: float, finalize: bool) -> None:
        if self.target is not None and self.target > 0:
            digits = int(math.log10(self.target)) + 1
            count = f"{current:>{digits}d}/{self.target}"
            done = int(self.width * current / self.target)
            bar = f"\x1b[1m{count}\x1b[0m "
            visible = len(count) + 1 + self.width
            if done > 0:
                bar += f"\33[32m{'━' * done}\x1b[0m"
            bar += f"\33[37m{'━' * (self.width - done)}\x1b[0m"
        else:
            bar = f"{current:7d}/Unknown"
            visible = len(bar)
        if self.target is not None and self.target > 0 and not finalize:
            eta = per_unit * (self.target - current)
            if eta > 3600:
                eta_text = f"{int(eta // 3600)}:{int(eta % 3600 // 60):02d}:{int(eta % 60):02d}"
            elif eta > 60:
                eta_text = f"{int(eta // 60)}:{int(eta % 60):02d}"
            else:
                eta_text = f"{int(eta)}s"
        else:
            eta_text = f"{now - self._start:.0f}s"
        info = format_time_per_unit(per_unit, self.unit_name) + format_logs(self._values, 1)
        text = bar + f" \x1b[1m{eta_text}\x1b[0m" + info
        visible += 1 + len(eta_text) + len(info)
        if finalize and self.suffix:
            text += self.suffix
            visible += len(self.suffix)
        if finalize:
            self.writer.end_status(text, visible)
        else:
            self.writer.status(text, visible)

    def _plain_line(self, current: int, now: float, per_unit: float) -> str:
        target = self.target if self.target is not None and self.target > 0 else current
        digits = int(math.log10(max(target, 1))) + 1
        return (f"{current:>{digits}d}/{target} - {now - self._start:.0f}s -"
                f"{format_time_per_unit(per_unit, self.unit_name)}" + format_logs(self._values, 2) + self.suffix)


class ProgbarLogger(Callback):
    """Keras 3's progress callback: ``Epoch i/n`` and a `Progbar` per epoch, evaluate and predict.

    Args:
        writer: a `ProgressWriter` (default: sys.stdout).
    """

    def __init__(self, writer=None):
        super().__init__()
        self.writer = writer or default_writer()
        self.verbose = 1
        self.epochs = 1
        self.target = None
        self.progbar = None
        self.seen = 0
        self._in_fit = False
        self.data_note = ""

    def set_params(self, params):
        super().set_params(params)
        verbose = params.get("verbose", 1)
        self.verbose = 1 if verbose == "auto" else int(verbose)
        self.epochs = params.get("epochs", 1)
        self.target = params.get("steps")
        self.data_note = data_note(params)

    def _new_bar(self):
        self.seen = 0
        self.progbar = Progbar(self.target, verbose=self.verbose, writer=self.writer)

    def on_train_begin(self, logs=None):
        self._in_fit = True

    def on_train_end(self, logs=None):
        self._in_fit = False

    def on_epoch_begin(self, epoch, logs=None):
        self._new_bar()
        if self.verbose and self.epochs > 1:
            self.writer.line(f"Epoch {epoch + 1}/{self.epochs}")

    def needs_batch_logs(self, batch) -> bool:
        """Whether the bar will show this training batch's values (verbose=1 on a terminal, once its
        redraw interval has passed); fit reads a step's results only where someone does."""
        bar = self.progbar
        if self.verbose != 1 or (bar is not None and not bar.dynamic):
            return False
        return bar is None or time.time() - bar._last_update >= bar.interval

    def on_train_batch_end(self, batch, logs=None):
        self._update(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._finalize(logs)

    def on_test_begin(self, logs=None):
        if not self._in_fit:
            self._new_bar()

    def on_test_batch_end(self, batch, logs=None):
        if not self._in_fit:
            self._update(batch, logs)

    def on_test_end(self, logs=None):
        if not self._in_fit:
            self._finalize(logs)

    def on_predict_begin(self, logs=None):
        self._new_bar()

    def on_predict_batch_end(self, batch, logs=None):
        self._update(batch, None)

    def on_predict_end(self, logs=None):
        self._finalize(None)

    def _update(self, batch, logs):
        if self.progbar is None:
            self._new_bar()
        self.seen = batch + 1
        if self.verbose == 1:
            self.progbar.update(self.seen, logs or {}, finalize=False)

    def _finalize(self, logs):
        if self.progbar is None or not self.verbose:
            return
        if self.target is None:  # data of unknown length: the next epochs' bars count to this one's steps (Keras)
            self.target = self.progbar.target = self.seen
        if self._in_fit:
            self.progbar.suffix = self.data_note
        self.progbar.update(self.progbar.target or self.seen, logs or {}, finalize=True)
        self.progbar = None


class FlexFlowLogger(Callback):
    """FlexFlow's print-frequency lines during fit, and the elapsed time and throughput at its end.

    Args:
        print_freq: print every this many training iterations (``-p``); 0 or None: only the summary.
        batch_size: samples per step (the last step of an epoch may be smaller, from params["samples"]).
        writer: a `ProgressWriter`.
        lines: force the periodic lines on (True) or off (False); None: on when stdout is not a
            terminal, or when ``-p`` was given on the command line.
    """

    def __init__(self, print_freq=None, batch_size=None, writer=None, lines=None):
        super().__init__()
        self.print_freq = int(print_freq or 0)
        self.batch_size = batch_size
        self.writer = writer or default_writer()
        self._lines = lines
        self.verbose = 1
        self._asked = None

    def set_params(self, params):
        super().set_params(params)
        verbose = params.get("verbose", 1)
        self.verbose = 1 if verbose == "auto" else int(verbose)

    def _lines_on(self) -> bool:
        if self._lines is not None:
            return self._lines
        if not self.verbose or not self.print_freq:
            return False
        if not self.writer.isatty() and self.verbose == 1:
            return True
        from flexflow_keras import config

        return "print_freq" in config.get().from_cli

    def on_train_begin(self, logs=None):
        params = self.params or {}
        self.steps = params.get("steps")
        self.epochs = params.get("epochs", 1)
        self.samples_per_epoch = params.get("samples")
        self.total_samples = 0
        self.iteration = 0
        self.epochs_done = 0
        self._t0 = self._t_last = time.perf_counter()
        self._samples_last = 0
        self._show = self._lines_on()
        self._first_epoch = None
        self._asked = None  # (iteration, whether a line is due) as needs_batch_logs answered

    def on_epoch_begin(self, epoch, logs=None):
        if self._first_epoch is None:
            self._first_epoch = epoch  # fit(initial_epoch=...) trains epochs - initial_epoch epochs
        self.epoch = epoch

    def _batch_samples(self, batch, logs) -> int:
        if logs and "size" in logs:
            return int(logs["size"])
        rows = getattr(self.model, "_batch_rows", None)  # what fit trained on (also past one pass of data)
        if rows is not None:
            return int(rows)
        bs = self.batch_size or (self.params or {}).get("batch_size") or 0
        if self.samples_per_epoch and bs:
            return int(max(0, min(bs, self.samples_per_epoch - batch * bs)))
        return int(bs)

    def needs_batch_logs(self, batch) -> bool:
        """Whether this training batch gets a line (every `print_freq` iterations, or after a slow step);
        fit reads a step's results only where someone does."""
        if not self._show:
            return False
        due = self._due(self.iteration + 1)
        self._asked = (self.iteration + 1, due)  # on_train_batch_end keeps this answer for the iteration
        return due

    def _due(self, iteration: int) -> bool:
        return iteration % self.print_freq == 0 or time.perf_counter() - self._t_last >= SLOW_STEP_SECONDS

    def on_train_batch_end(self, batch, logs=None):
        self.iteration += 1
        self.total_samples += self._batch_samples(batch, logs)
        if not self._show:
            return
        asked, self._asked = self._asked, None
        if asked is not None and asked[0] == self.iteration:
            # the answer fit got, which decided whether these logs are fresh: a slow step's 5 s
            # passing between the two checks would otherwise print the values of an earlier read
            due = asked[1]
        else:
            due = self._due(self.iteration)
        if due:
            now = time.perf_counter()
            rate = (self.total_samples - self._samples_last) / max(now - self._t_last, 1e-9)
            self._t_last, self._samples_last = now, self.total_samples
            total = f"/{self.steps * (self.epochs - self._first_epoch)}" if self.steps else ""
            where = f"epoch {self.epoch + 1}/{self.epochs}, step {batch + 1}" + (f"/{self.steps}" if self.steps else "")
            self.writer.line(f"iter {self.iteration}{total} ({where})" + format_logs(logs or {}, 1)
                             + f" - {rate:.1f} samples/s" + data_note(self.params))

    def on_epoch_end(self, epoch, logs=None):
        self.epochs_done += 1

    def on_train_end(self, logs=None):
        if not self.verbose:
            return
        elapsed = time.perf_counter() - self._t0
        rate = self.total_samples / max(elapsed, 1e-9)
        self.writer.line(f"Training: {self.epochs_done} epoch(s), {self.iteration} iterations, "
                         f"{self.total_samples} samples in {elapsed:.2f}s - {rate:.1f} samples/s")
