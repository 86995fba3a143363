"""A Python generator as fit's `validation_data`: the validation batches each epoch are those Keras 3.15
(through TensorFlow 2.21) reads: all of them the first epoch, then the two it kept; with validation_steps,
one stream across epochs."""

import os
import subprocess
import sys

import numpy as np
import pytest

import flexflow_keras as keras

SCRIPT = """
import numpy as np
import {module} as keras
x = np.arange(32 * 4, dtype="float32").reshape(32, 4) / 128
y = np.ones((32, 1), "float32")
def gen(endless):
    while True:
        for i in range(0, 32, 8):
            yield x[i:i + 8], y[i:i + 8] * i
        if not endless:
            return
class Seen(keras.callbacks.Callback):
    def on_test_begin(self, logs=None):
        self.epoch = []
        seen.append(self.epoch)
    def on_test_batch_end(self, b, logs=None):
        self.epoch.append(b)
def run(endless, steps):
    global seen
    seen = []
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    m.fit(x, y, epochs=3, batch_size=16, validation_data=gen(endless), validation_steps=steps, verbose=0,
          callbacks=[Seen()])
    return [len(e) for e in seen]
RESULT = [run(False, None), run(True, 2)]
"""


def _ours():
    scope = {}
    exec(SCRIPT.format(module="flexflow_keras"), scope)  # noqa: S102 - the same script as Keras' run below
    return scope["RESULT"]


def test_validation_generator_batches_per_epoch_as_keras():
    assert _ours() == [[4, 2, 2], [2, 2, 2]]


def test_validation_generator_matches_keras_through_tensorflow():
    pytest.importorskip("tensorflow")
    code = SCRIPT.format(module="keras") + "\nprint('RESULT', RESULT)\n"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                          cwd="/")
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    assert line == f"RESULT {_ours()}"


def test_later_epochs_warn_that_only_the_kept_batches_are_read(caplog):
    def gen():
        for i in range(4):
            yield np.full((4, 2), i, "float32"), np.zeros((4, 1), "float32")

    m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    with caplog.at_level("WARNING", logger="flexflow_keras"):
        history = m.fit(np.zeros((8, 2), "float32"), np.zeros((8, 1), "float32"), epochs=3, batch_size=8,
                        validation_data=gen(), verbose=0)
    assert len(history.history["val_loss"]) == 3
    assert sum("first 2 batches only" in r.getMessage() for r in caplog.records) == 1
