"""Training flags given to a script that never trains (or never chooses a strategy) had no effect and said
nothing: `python predict.py -e 3 --export-strategy s.json` exited 0 and wrote no file. The end of the run now
warns, naming the flags and why; a script that trains reads them and gets no such line."""

import os
import subprocess
import sys

PREDICT = """
import numpy as np
import flexflow_keras as keras
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
print(m.predict(np.zeros((8, 4), "float32"), verbose=0).shape)
"""

TRAIN = """
import numpy as np
import flexflow_keras as keras
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
m.compile(optimizer="sgd", loss="mse")
m.fit(np.zeros((8, 4), "float32"), np.zeros((8, 2), "float32"), epochs=2, verbose=0)
"""


def _run(tmp_path, code, *args):
    path = tmp_path / "script.py"
    path.write_text(code)
    env = dict(os.environ, FF_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env=env)


def test_flags_of_a_script_that_never_trains_are_named_at_exit(tmp_path):
    out = tmp_path / "s.json"
    r = _run(tmp_path, PREDICT, "-e", "3", "-p", "5", "--export-strategy", str(out), "--search-only")
    assert r.returncode == 0, r.stderr[-2000:]
    assert (f"warning: -e 3, -p 5, --export-strategy {out}, --search-only given on the command line had no "
            f"effect: this script never called fit(). Drop them.") in r.stderr
    assert "Traceback" not in r.stderr and not out.exists()


def test_a_script_that_trains_reads_them(tmp_path):
    out = tmp_path / "s.json"
    r = _run(tmp_path, TRAIN, "-e", "1", "-p", "5", "--export-strategy", str(out), "-ll:cpu", "2")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "had no effect" not in r.stderr and out.exists()


def test_a_run_that_ends_on_an_error_before_fit_prints_only_the_error(tmp_path):
    code = "import flexflow_keras as keras\nkeras.datasets.mnist.load_data()\n"
    r = _run(tmp_path, code, "-e", "3", "-d", str(tmp_path / "missing.npz"))
    assert r.returncode == 1
    assert "flexflow_keras: error:" in r.stderr and "had no effect" not in r.stderr
