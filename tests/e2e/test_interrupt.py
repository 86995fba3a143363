"""Ctrl-C ends a run within 5 s on every processor kind, the strategy search included: the script is
started as a user would start it, SIGINT is sent once it is mid-training (or mid-search), and the
process must exit with status 130 and one line naming where it was, without a traceback. A failing callback
ends the run with its message."""

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MNIST_MLP = str(ROOT / "examples" / "mnist_mlp.py")
EXIT_WITHIN = 5.0  # seconds from SIGINT to exit: the promise
STARTUP = 240.0    # seconds allowed to reach the marker on a loaded machine

TINY_MLP = textwrap.dedent("""
    import numpy as np
    import flexflow_keras as keras
    from flexflow_keras import layers
    x = np.random.default_rng(0).standard_normal((64, 8)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    model = keras.Sequential([keras.Input(shape=(8,)), layers.Dense(8, activation="relu"),
                              layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=8, epochs=1)
""")


def _sim_usable() -> bool:
    try:
        proc = subprocess.run([sys.executable, "-c", "from numba import cuda; cuda.to_device([1.0])"],
                              env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"), capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def default_sigint() -> None:
    """In the child: SIGINT to its default, so Python installs its Ctrl-C handler even when the test run
    was started in the background of a non-interactive shell (`cmd &`), which starts it ignored and
    passes that on to every child, as a user's `nohup train.py &` would be."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(tmp_path, argv, marker, env_extra=None, settle=0.5):
    """Start `argv`, wait for a line containing `marker`, send SIGINT after `settle` s; returns
    (exit status, seconds from SIGINT to exit, output after the marker)."""
    env = dict(os.environ, HOME=str(tmp_path), FF_CACHE_DIR=str(tmp_path / "cache"), PYTHONUNBUFFERED="1",
               FF_LOG_LEVEL="INFO")
    env.pop("FF_DEBUG", None)
    env.update(env_extra or {})
    proc = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, cwd=str(tmp_path), preexec_fn=default_sigint)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(s) for s in proc.stdout] + [lines.put(None)], daemon=True).start()
    seen = []
    deadline = time.monotonic() + STARTUP
    try:
        while True:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if line is None:
                pytest.fail(f"the run ended before {marker!r} appeared:\n{''.join(seen)[-3000:]}")
            seen.append(line)
            if marker in line:
                break
        time.sleep(settle)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"no exit 60 s after SIGINT:\n{''.join(seen)[-3000:]}")
        took = time.monotonic() - t0
    except queue.Empty:
        pytest.fail(f"{marker!r} did not appear within {STARTUP} s:\n{''.join(seen)[-3000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rest = []
    while True:
        try:
            line = lines.get(timeout=5)
        except queue.Empty:
            break
        if line is None:
            break
        rest.append(line)
    return rc, took, "".join(rest)


def check(rc, took, out, where):
    assert rc == 130, out[-3000:]
    assert took < EXIT_WITHIN, f"took {took:.1f} s\n{out[-3000:]}"
    assert out.count("flexflow_keras: interrupted (Ctrl-C)") == 1, out[-3000:]
    line = next(s for s in out.splitlines() if s.startswith("flexflow_keras: interrupted (Ctrl-C)"))
    assert where in line, line
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out[-3000:]


@pytest.mark.parametrize("executor", ["threaded", "sequential"])
def test_ctrl_c_mid_training_on_the_cpu(tmp_path, executor):
    rc, took, out = interrupt(tmp_path, [MNIST_MLP, "-e", "50", "-p", "5", "--only-data-parallel",
                                         "--executor", executor], "iter ")
    check(rc, took, out, " at epoch 1 step ")


def test_ctrl_c_during_the_strategy_search(tmp_path):
    rc, took, out = interrupt(tmp_path, [MNIST_MLP, "-e", "50", "--search-budget", "100000"], "search for")
    check(rc, took, out, " during the strategy search")


def test_ctrl_c_with_debug_shows_the_traceback(tmp_path):
    rc, took, out = interrupt(tmp_path, [MNIST_MLP, "-e", "50", "-p", "5", "--only-data-parallel"], "iter ",
                              env_extra={"FF_DEBUG": "1"})
    assert rc == 130 and took < EXIT_WITHIN, out[-3000:]
    assert "Traceback" in out and "KeyboardInterrupt" in out
    assert out.count("flexflow_keras: interrupted (Ctrl-C) at epoch 1 step ") == 1, out[-3000:]


@pytest.mark.parametrize("executor", ["threaded", "sequential"])
def test_ctrl_c_on_the_cuda_simulator(tmp_path, executor):
    if not _sim_usable():
        pytest.skip("numba's CUDA simulator cannot run here")
    script = tmp_path / "tiny_mlp.py"
    script.write_text(TINY_MLP)
    rc, took, out = interrupt(tmp_path, [str(script), "-ll:gpu", "1", "-e", "1000", "-p", "1", "--executor", executor],
                              "iter 2/", env_extra={"NUMBA_ENABLE_CUDASIM": "1"})
    check(rc, took, out, " at epoch ")


FAILING_CALLBACK = textwrap.dedent("""
    import numpy as np
    import flexflow_keras as keras
    from flexflow_keras import layers

    class Boom(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 3:
                raise RuntimeError("callback Boom failed at batch 3")

    x = np.random.default_rng(0).standard_normal((640, 8)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    model = keras.Sequential([keras.Input(shape=(8,)), layers.Dense(8, activation="relu"),
                              layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=8, epochs=500, callbacks=[Boom()], verbose=0)
""")


@pytest.mark.parametrize("executor", ["threaded", "sequential"])
def test_a_failing_callback_ends_the_run_with_its_message(tmp_path, executor):
    script = tmp_path / "failing_callback.py"
    script.write_text(FAILING_CALLBACK)
    env = dict(os.environ, HOME=str(tmp_path), FF_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, str(script), "--executor", executor], capture_output=True, text=True,
                          timeout=120, env=env, cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "callback Boom failed at batch 3" in proc.stderr


IMAGE_FOLDER_CNN = textwrap.dedent("""
    import os
    import numpy as np
    from PIL import Image
    import flexflow_keras as keras
    from flexflow_keras import layers

    root = "images"
    rng = np.random.default_rng(0)
    for c in range(2):
        os.makedirs(f"{root}/c{c}", exist_ok=True)
        for i in range(96):
            Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(f"{root}/c{c}/{i}.png")
    ds = keras.utils.image_dataset_from_directory(root, image_size=(32, 32), batch_size=16, seed=1)
    model = keras.Sequential([keras.Input((32, 32, 3)), layers.Conv2D(4, 3, activation="relu"),
                              layers.Flatten(), layers.Dense(2)])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ds, epochs=1000)
""")


def _processes_running(marker: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            found.append(f"{pid}: {cmd}")
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="decoder processes are forked on Linux only")
def test_ctrl_c_while_decoder_processes_load_an_image_folder(tmp_path):
    # The loaders' decoder processes ignore SIGINT: the program stops within the promise, and they end
    # with it (none is left running after the run has exited).
    script = tmp_path / "folder_cnn.py"
    script.write_text(IMAGE_FOLDER_CNN)
    rc, took, out = interrupt(tmp_path, [str(script), "-p", "2", "--only-data-parallel"], "iter ")
    check(rc, took, out, " at epoch ")
    deadline = time.monotonic() + 5.0
    while _processes_running(str(script)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _processes_running(str(script))
