"""Flags and clean errors as a user meets them: the example script and small scripts run as subprocesses."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MNIST_MLP = ROOT / "examples" / "mnist_mlp.py"

TINY = """
import numpy as np
import flexflow_keras as keras
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
m.compile(loss="mse")
m.fit(np.zeros((16, 4), "float32"), np.zeros((16, 2), "float32"), batch_size=8, verbose=0)
print("trained")
"""

WITH_ARGPARSE = """
import argparse
import numpy as np
import flexflow_keras as keras

parser = argparse.ArgumentParser(description="a script with its own flags")
parser.add_argument("--epoch", type=int, default=1, help="the script's own epoch count")
args, _ = parser.parse_known_args()
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
m.compile(loss="mse")
m.fit(np.zeros((16, 4), "float32"), np.zeros((16, 2), "float32"), batch_size=8, epochs=args.epoch, verbose=0)
print("trained", args.epoch)
"""

FOREIGN_HOOK = """
import sys
sys.excepthook = lambda t, e, tb: sys.__excepthook__(t, e, tb)  # another library's hook, set first
import flexflow_keras as keras
from flexflow_keras.errors import DataError
raise DataError("the file x.npz holds no arrays; expected x_train/y_train")
"""


def run(args, home, script=MNIST_MLP, env=None, timeout=300):
    full = {k: v for k, v in os.environ.items() if k != "FF_DEBUG"}
    full.update(HOME=str(home), FF_LOG_LEVEL="INFO", PYTHONUNBUFFERED="1", **(env or {}))
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout,
                          env=full, cwd=str(home))


def script(tmp_path, text, name="train.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


def no_gpu() -> bool:
    from runtime import gpu

    return gpu.device_count()[0] == 0


def test_help_lists_the_flags_and_never_trains(tmp_path):
    r = run(["--help", "-e", "1"], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "-ll:gpu" in r.stdout and "--data-parallel-degree" in r.stdout and "FF_EPOCHS" in r.stdout
    out = r.stdout + r.stderr
    assert "fit:" not in out and "test accuracy" not in out and "data:" not in out


def test_help_with_the_scripts_argparse_shows_both(tmp_path):
    r = run(["-h"], tmp_path, script=script(tmp_path, WITH_ARGPARSE))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "the script's own epoch count" in r.stdout and "flexflow_keras flags" in r.stdout
    assert "-ll:zsize" in r.stdout and "trained" not in r.stdout


def test_a_flag_the_script_declares_is_not_a_mistake(tmp_path):
    path = script(tmp_path, WITH_ARGPARSE)
    r = run(["--epoch", "2"], tmp_path, script=path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "trained 2" in r.stdout
    r = run(["--epoch", "2", "--batchsize", "8"], tmp_path, script=path)
    assert r.returncode == 2 and "did you mean --batch-size?" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args, env, words", [
    (["--epoch", "3", "-b", "256"], {}, ["Unknown flag --epoch: did you mean --epochs?"]),
    (["-ll:gpus", "2"], {}, ["Unknown flag -ll:gpus: did you mean -ll:gpu?"]),
    (["-ll:zsize", "0"], {}, ["-ll:zsize must be a positive number of MB (1 or more), received 0"]),
    ([], {"FF_EPOCHS": "abc"}, ["FF_EPOCHS=abc: expected an int", "received 'abc'"]),
    (["-b", "16", "--data-parallel-degree", "32"], {}, ["--data-parallel-degree 32 asks for 32 pieces of a "
                                                       "batch of 16", "1, 2, 4, 8, 16"]),
])
def test_usage_errors_are_one_block_and_exit_2(tmp_path, args, env, words):
    path = MNIST_MLP if "-ll:" in " ".join(args) or "--epoch" in args else script(tmp_path, TINY)
    r = run(args, tmp_path, script=path, env=env)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert r.stderr.count("flexflow_keras: error:") == 1
    for w in words:
        assert w in r.stderr
    assert "--help lists the flags" in r.stderr


@pytest.mark.skipif(not no_gpu(), reason="this host has a (possibly simulated) CUDA device")
def test_gpus_this_host_lacks_is_a_usage_error_without_traceback(tmp_path):
    r = run(["-ll:gpu", "2"], tmp_path, script=script(tmp_path, TINY))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "-ll:gpu 2 asks for 2 GPU(s)" in r.stderr and "-ll:gpu 0" in r.stderr


@pytest.mark.skipif(not no_gpu(), reason="this host has a (possibly simulated) CUDA device")
@pytest.mark.parametrize("how", [["--debug"], ["FF_DEBUG=1"]])
def test_debug_shows_the_traceback(tmp_path, how):
    env = {"FF_DEBUG": "1"} if how == ["FF_DEBUG=1"] else {}
    args = ["-ll:gpu", "2"] + ([] if env else how)
    r = run(args, tmp_path, script=script(tmp_path, TINY), env=env)
    assert r.returncode == 2  # the same status as without --debug
    assert "Traceback" in r.stderr and "MachineError" in r.stderr


def test_data_errors_exit_1_even_under_another_librarys_hook(tmp_path):
    r = run([], tmp_path, script=script(tmp_path, FOREIGN_HOOK))
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert "flexflow_keras: error: the file x.npz holds no arrays" in r.stderr


def test_cpus_above_the_cores_warn_and_train(tmp_path):
    cores = len(os.sched_getaffinity(0))
    r = run(["-ll:cpu", "64", "--data-parallel-degree", "2", "-e", "1", "-b", "256", "-p", "1000"], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"-ll:cpu 64 asks for 64 CPU processors, but this process may run on {cores} core(s)" in r.stderr
    assert "test accuracy" in r.stdout


def test_fsize_without_gpus_warns_and_trains(tmp_path):
    r = run(["-ll:fsize", "16000"], tmp_path, script=script(tmp_path, TINY))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "-ll:fsize 16000 sets the memory of each GPU, but -ll:gpu is 0: it is ignored" in r.stderr
    assert "trained" in r.stdout


def test_a_forced_degree_that_splits_the_batch_unevenly_warns_and_trains(tmp_path):
    r = run(["--data-parallel-degree", "3", "-ll:cpu", "4"], tmp_path, script=script(tmp_path, TINY))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "warning: --data-parallel-degree 3 splits the batch of 8 unevenly: 2 piece(s) of 3 and 1 of 2" in r.stderr
    assert "data parallelism, degree 3" in r.stderr and "trained" in r.stdout  # degree 3, never a silent 1


LOADS_FIRST = """
import flexflow_keras as keras
print("loading", flush=True)
(x, y), _ = keras.datasets.mnist.load_data()
print("loaded", flush=True)
model = keras.Sequential([keras.Input((28, 28)), keras.layers.Flatten(), keras.layers.Dense(10)])
print("built", flush=True)
"""

BUILDS_FIRST = """
import flexflow_keras as keras
print("building", flush=True)
model = keras.Sequential([keras.Input((28, 28)), keras.layers.Flatten(), keras.layers.Dense(10)])
print("built", flush=True)
"""


@pytest.mark.parametrize("args", [["--epoch", "2"], ["-ll:gpus", "2"]] +
                         ([["-ll:gpu", "2"]] if no_gpu() else []))
@pytest.mark.parametrize("text", [LOADS_FIRST, BUILDS_FIRST], ids=["load_data", "model"])
def test_a_flag_mistake_stops_the_script_before_it_loads_data_or_builds_a_model(tmp_path, args, text):
    # The seed's users pass -d with a large dataset: a typo must not cost them its loading first.
    r = run(args, tmp_path, script=script(tmp_path, text))
    assert r.returncode == 2, r.stdout + r.stderr[-2000:]
    assert "loaded" not in r.stdout and "built" not in r.stdout, r.stdout
    assert r.stderr.count("flexflow_keras: error:") == 1 and "Traceback" not in r.stderr
