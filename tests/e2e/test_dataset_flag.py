"""`-d` on the command line, as a user runs the examples: real formats train and are named in the log; a
-d that exists but holds nothing usable is one clean error (exit 1), even with a mnist.npz in the Keras
cache; fit() without data reads -d shaped for the model's input."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from dataset_files import mnist_idx_dir  # tests/dataset_files.py

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FAST = ("-e", "1", "-b", "256", "-ll:cpu", "2", "--only-data-parallel")


def run(script, *args, home, timeout=300):
    env = dict(os.environ, FF_LOG_LEVEL="INFO", PYTHONUNBUFFERED="1", HOME=str(home))
    env.pop("KERAS_HOME", None)
    env.pop("FF_DEBUG", None)
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=str(ROOT))


def assert_one_clean_error(proc, *fragments):
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])
    assert proc.stderr.count("flexflow_keras: error:") == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr[-3000:]
    assert "synthetic data (" not in proc.stderr and "Keras cache" not in proc.stderr  # no fall back


def test_mnist_idx_directory_trains_and_is_named(tmp_path):
    mnist_idx_dir(tmp_path / "mnist", gz=True, n=512)
    proc = run(EXAMPLES / "mnist_mlp.py", *FAST, "-d", str(tmp_path / "mnist"), home=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"read {tmp_path / 'mnist'} (from -d): MNIST IDX files, 512 train + 2 test samples, 10 classes" in proc.stderr
    assert "synthetic" not in proc.stderr.lower() and "test accuracy" in proc.stdout


def test_empty_folder_is_one_clean_error(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = run(EXAMPLES / "mnist_mlp.py", *FAST, "-d", str(tmp_path / "empty"), home=tmp_path)
    assert_one_clean_error(proc, "found an empty directory", "Accepted: an .npz", "mnist needs 28x28")


def test_unusable_d_wins_over_a_cached_mnist(tmp_path):
    cache = tmp_path / ".keras" / "datasets"
    cache.mkdir(parents=True)
    np.savez(cache / "mnist.npz", x_train=np.zeros((64, 28, 28), np.uint8), y_train=np.zeros(64, np.uint8),
             x_test=np.zeros((8, 28, 28), np.uint8), y_test=np.zeros(8, np.uint8))
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(3):
        (notes / f"{i}.txt").write_text("not data")
    proc = run(EXAMPLES / "mnist_mlp.py", *FAST, "-d", str(notes), home=tmp_path)
    assert_one_clean_error(proc, "found a directory of 3 .txt files")
    np.save(tmp_path / "x.npy", np.zeros((4, 28, 28), np.uint8))
    proc = run(EXAMPLES / "mnist_mlp.py", *FAST, "-d", str(tmp_path / "x.npy"), home=tmp_path)
    assert_one_clean_error(proc, "needs its partner y.npy")


def test_reuters_with_a_wrong_file_is_an_error(tmp_path):
    path = tmp_path / "mnist.npz"
    np.savez(path, x_train=np.zeros((4, 28, 28), np.uint8), y_train=np.zeros(4, np.uint8))
    proc = run(EXAMPLES / "reuters_mlp.py", *FAST, "-d", str(path), home=tmp_path)
    assert_one_clean_error(proc, "reuters.load_data(): -d", "an .npz with keys x_train, y_train",
                           "reuters needs Keras' reuters.npz")


FIT_WITHOUT_DATA = """
import flexflow_keras as keras
model = keras.Sequential([keras.Input(shape=(28, 28, 1)), keras.layers.Flatten(),
                          keras.layers.Dense(10, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit()
print("evaluated", model.evaluate(verbose=0))
"""


def test_fit_without_data_reads_d_shaped_for_the_model(tmp_path):
    mnist_idx_dir(tmp_path / "mnist", gz=False, n=300)
    script = tmp_path / "train.py"
    script.write_text(FIT_WITHOUT_DATA)
    proc = run(script, *FAST, "-d", str(tmp_path / "mnist"), home=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (f"data: -d {tmp_path / 'mnist'} (MNIST IDX files): 300 training samples, 10 classes, inputs (28, 28) "
            f"uint8; reshaped (28, 28) to (28, 28, 1)") in proc.stderr
    assert "2 test samples" in proc.stderr and "evaluated" in proc.stdout
    csv = tmp_path / "bad.csv"
    csv.write_text("a,b,label\n1,2,0\n3,x,1\n")
    proc = run(script, *FAST, "-d", str(csv), home=tmp_path)
    assert_one_clean_error(proc, "line 3, column 'b' holds 'x', not a number")
    good = tmp_path / "small.csv"
    good.write_text("a,b,label\n1,2,0\n3,4,1\n")
    proc = run(script, *FAST, "-d", str(good), home=tmp_path)
    assert_one_clean_error(proc, "inputs have shape (2,) per sample", "expects (28, 28, 1)")
