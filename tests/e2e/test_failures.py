"""A failing task, loader or callback ends the run promptly with its message, run as a user runs a script.

Each script is written to tmp_path and run as a subprocess with a timeout (a hang fails the test). An
exception raised inside a runtime task (a kernel, the loader gathering a batch) prints the original
exception with its traceback from the task body down, then one line naming the task, its point and
processor, and the script's call; the runtime adds nothing else (no second traceback through the
training loop, no log of the other shards failing the same way). A flexflow_keras error raised in a task
prints the usual one clean block. A user's callback raising shows Python's usual traceback. `--debug`
shows everything.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120  # generous for a loaded 2-core machine; every script here fails within its first steps

MODEL = """
import sys
import numpy as np
import flexflow_keras as keras

model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)])
model.compile("sgd", "sparse_categorical_crossentropy")
x, y = np.ones((256, 8), np.float32), np.zeros(256, np.int32)
"""

# The Dense kernel raises from its FAIL_AFTER-th call on (0: at once; later: in a replayed training step).
KERNEL = MODEL + """
import kernels.linear as kl

calls = [0]
real = kl.linear_forward_cpu
FAIL_AFTER = int(sys.argv[1])

def flaky_kernel(*args, **kwargs):
    calls[0] += 1
    if calls[0] > FAIL_AFTER:
        raise FloatingPointError("kernel overflow in the custom matmul")
    return real(*args, **kwargs)

model.fit(x[:64], y[:64], batch_size=32, epochs=1, verbose=0)  # the strategy is chosen, steps traced
kl.linear_forward_cpu = flaky_kernel
if sys.argv[2] == "fit":
    model.fit(x, y, batch_size=32, epochs=3, verbose=0)
else:
    model.predict(x, batch_size=32, verbose=0)
print("finished")
"""

# The Dense layer's CUDA kernel raises (run on the CUDA simulator).
GPU_KERNEL = MODEL + """
import kernels.gpu.linear as gpu_linear

def failing_cuda_kernel(*args, **kwargs):
    raise FloatingPointError("the CUDA matmul found a NaN")

gpu_linear.linear_forward_cuda = failing_cuda_kernel
model.fit(x[:16], y[:16], batch_size=8, epochs=1, verbose=0)
print("finished")
"""

# The loader's gather of a batch's rows fails (a read error, or a data check raising a DataError).
LOADER = MODEL + """
import types
import flexflow_keras.execution.tasks as loader_tasks
from flexflow_keras.errors import DataError

class FailingGather(types.ModuleType):
    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def take(*args, **kwargs):
        if sys.argv[1] == "data":
            raise DataError("sample 17 of x is corrupt: its row could not be read")
        raise OSError("read error on /data/shard-3")

loader_tasks.np = FailingGather("numpy")
model.fit(x, y, batch_size=32, epochs=2, verbose=0)
print("finished")
"""

CALLBACK = MODEL + """
class CallbackRefused(Exception):
    pass

class Refuse(keras.callbacks.Callback):
    def on_batch_end(self, batch, logs=None):
        if sys.argv[1] == "batch" and batch == 2:
            raise CallbackRefused("my callback refused batch 2")

    def on_epoch_end(self, epoch, logs=None):
        if sys.argv[1] == "epoch":
            raise CallbackRefused(f"my callback refused epoch {epoch}")

model.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[Refuse()])
print("finished")
"""


def run_script(tmp_path, source, *args, env_extra=None):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source))
    env = {k: v for k, v in os.environ.items() if k not in ("FF_DEBUG",)}
    env.update(HOME=str(tmp_path), PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.update(env_extra or {})
    cpus = [] if any(a.startswith("-ll:cpu") for a in args) else ["-ll:cpu", "2"]
    return subprocess.run([sys.executable, str(script), *args, *cpus], capture_output=True, text=True,
                          env=env, cwd=str(tmp_path), timeout=TIMEOUT_S)


def assert_task_failure(proc, message, task, script_line):
    err = proc.stderr
    detail = err[-4000:]
    assert proc.returncode == 1, detail
    assert "finished" not in proc.stdout
    assert err.count(message) == 1, detail  # the original message, once
    assert "The above exception was the direct cause" not in err, detail
    assert "runtime.errors.TaskError" not in err and "/runtime/" not in err, detail  # no runtime frames
    assert "unreported task failure" not in err, detail
    tail = err.strip().splitlines()[-1]
    assert tail.startswith(f"flexflow_keras: the error above was raised in task '{task}"), detail
    assert f"train.py, line {script_line}" in tail, detail


def line_of(source, text):
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


@pytest.mark.parametrize("fail_after, call, extra", [
    (0, "fit", []),                                          # the first step
    (0, "fit", ["--data-parallel-degree", "2"]),             # both shards fail: reported once
    (10, "fit", ["--executor", "sequential", "--data-parallel-degree", "2"]),  # a replayed step
    (0, "predict", []),
])
def test_a_failing_kernel_ends_the_run_with_its_traceback(tmp_path, fail_after, call, extra):
    proc = run_script(tmp_path, KERNEL, str(fail_after), call, *extra)
    assert_task_failure(proc, "FloatingPointError: kernel overflow in the custom matmul", "dense",
                        line_of(KERNEL, f"model.{call}(x, y" if call == "fit" else "model.predict(x,"))
    assert 'in flaky_kernel\n    raise FloatingPointError("kernel overflow' in proc.stderr  # the user's frame


def test_a_failing_kernel_on_the_simulated_gpu_ends_the_run(tmp_path):
    proc = run_script(tmp_path, GPU_KERNEL, "-ll:gpu", "1", "-ll:cpu", "1", env_extra={"NUMBA_ENABLE_CUDASIM": "1"})
    assert_task_failure(proc, "FloatingPointError: the CUDA matmul found a NaN", "dense.forward",
                        line_of(GPU_KERNEL, "model.fit(x[:16]"))
    assert "on GPU0" in proc.stderr


def test_a_failing_loader_ends_the_run_with_its_traceback(tmp_path):
    proc = run_script(tmp_path, LOADER, "io")
    assert_task_failure(proc, "OSError: read error on /data/shard-3", "loader",
                        line_of(LOADER, "model.fit(x, y"))
    assert "in take\n" in proc.stderr


def test_a_data_error_in_the_loader_is_one_clean_block(tmp_path):
    proc = run_script(tmp_path, LOADER, "data")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("flexflow_keras: error:")]
    assert len(starts) == 1, proc.stderr[-3000:]
    block = "\n".join(lines[starts[0]:])
    assert "sample 17 of x is corrupt" in lines[starts[0]]
    assert "task 'loader'" in block or "task loader" in block, block  # the block names the task


def test_debug_shows_the_runtime_frames(tmp_path):
    proc = run_script(tmp_path, KERNEL, "0", "fit", "--debug")
    assert proc.returncode == 1
    assert "The above exception was the direct cause" in proc.stderr
    assert "runtime.errors.TaskError: task 'dense.forward'" in proc.stderr


@pytest.mark.parametrize("hook, message", [("batch", "my callback refused batch 2"),
                                           ("epoch", "my callback refused epoch 0")])
def test_a_failing_callback_ends_the_run_with_the_users_traceback(tmp_path, hook, message):
    proc = run_script(tmp_path, CALLBACK, hook)
    err = proc.stderr
    assert proc.returncode == 1, err[-3000:]
    assert "finished" not in proc.stdout
    assert err.strip().splitlines()[-1] == f"CallbackRefused: {message}", err[-3000:]
    assert err.count("Traceback (most recent call last)") == 1, err[-3000:]
    raising = 'raise CallbackRefused("my callback refused batch' if hook == "batch" else \
        'raise CallbackRefused(f"my callback refused epoch'
    assert f"train.py\", line {line_of(CALLBACK, raising)}, in on_{hook}_end" in err, err[-3000:]
    assert "unreported task failure" not in err and "flexflow_keras: error" not in err
