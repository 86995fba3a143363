"""The example scripts and the notebook run as a user runs them, with the seed's command line."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run(script, *args, timeout=300, home=None):
    env = dict(os.environ, FF_LOG_LEVEL="INFO", PYTHONUNBUFFERED="1")
    if home is not None:
        env["HOME"] = str(home)  # an empty Keras cache: the datasets fall back to synthetic data
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=str(ROOT))


def test_mnist_mlp_command_line_overrides_and_logs_the_data(tmp_path):
    proc = run("mnist_mlp.py", "-e", "1", "-b", "256", "-p", "50", "-ll:cpu", "2", home=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = proc.stderr
    assert "synthetic" in log.lower() and "mnist" in log.lower()
    assert "-b/--batch-size 256 on the command line overrides the script's batch_size=64" in log
    assert "test accuracy" in proc.stdout
    assert "iter 50/" in proc.stdout  # the -p 50 progress line
    acc = float(proc.stdout.strip().split("test accuracy")[-1])
    assert acc > 0.8  # the synthetic MNIST is learnable


def test_missing_dataset_path_fails_loudly(tmp_path):
    proc = run("mnist_mlp.py", "-d", str(tmp_path / "missing.npz"), home=tmp_path)
    assert proc.returncode != 0
    assert "missing.npz" in proc.stderr
    assert "flexflow_keras: error:" in proc.stderr and "Traceback" not in proc.stderr  # one clean message


def test_dataset_flag_reads_the_file(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "mnist.npz"
    np.savez(path, x_train=rng.integers(0, 255, (256, 28, 28), dtype=np.uint8),
             y_train=rng.integers(0, 10, 256, dtype=np.uint8),
             x_test=rng.integers(0, 255, (64, 28, 28), dtype=np.uint8),
             y_test=rng.integers(0, 10, 64, dtype=np.uint8))
    proc = run("mnist_mlp.py", "-d", str(path), "-ll:cpu", "2", home=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert str(path) in proc.stderr
    assert "synthetic" not in proc.stderr.lower()


def small_dataset(script, tmp_path):
    """A small file in the dataset's -d format, so each example trains one quick epoch."""
    rng = np.random.default_rng(0)
    if script == "cifar10_cnn.py":
        path = tmp_path / "cifar10.npz"
        np.savez(path, x_train=rng.integers(0, 255, (512, 32, 32, 3), dtype=np.uint8),
                 y_train=rng.integers(0, 10, (512, 1), dtype=np.uint8),
                 x_test=rng.integers(0, 255, (1024, 32, 32, 3), dtype=np.uint8),
                 y_test=rng.integers(0, 10, (1024, 1), dtype=np.uint8))
    elif script == "reuters_mlp.py":
        path = tmp_path / "reuters.npz"
        xs = np.empty(400, dtype=object)
        for i in range(400):
            xs[i] = list(rng.integers(1, 2000, rng.integers(5, 40)))
        np.savez(path, x=xs, y=rng.integers(0, 46, 400))
    else:
        path = tmp_path / "mnist.npz"
        np.savez(path, x_train=rng.integers(0, 255, (768, 28, 28), dtype=np.uint8),
                 y_train=rng.integers(0, 10, 768, dtype=np.uint8),
                 x_test=rng.integers(0, 255, (256, 28, 28), dtype=np.uint8),
                 y_test=rng.integers(0, 10, 256, dtype=np.uint8))
    return path


@pytest.mark.parametrize("script", ["mnist_cnn.py", "cifar10_cnn.py", "reuters_mlp.py",
                                    "func_mnist_mlp_concat.py", "subclassed_mnist.py"])
def test_examples_run(script, tmp_path):
    path = small_dataset(script, tmp_path)
    proc = run(script, "-e", "1", "-b", "64", "-ll:cpu", "2", "-d", str(path), home=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert str(path) in proc.stderr


def test_notebook_executes_headless():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(EXAMPLES / "notebooks" / "mnist_mlp.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "test accuracy" in outputs
