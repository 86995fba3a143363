"""--seed N makes a run repeatable (README, Data): it now seeds the framework's generator before its first
draw, so the initial weights repeat too (they came from an unseeded generator: python train.py --seed 1 gave
another first-epoch loss at every run). A script that seeds itself (keras.utils.set_random_seed) keeps its
own weights, and the log says which seed decides them."""

import subprocess
import sys

SCRIPT = """
import numpy as np
import flexflow_keras as keras
{seed_line}
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dropout(0.5), keras.layers.Dense(2)])
print("W", repr(np.round(m.get_weights()[0].ravel()[:4], 6).tolist()))
"""


def _weights(tmp_path, *args, seed_line=""):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT.format(seed_line=seed_line))
    r = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    return next(line for line in r.stdout.splitlines() if line.startswith("W ")), r.stderr


def test_the_seed_flag_fixes_the_initial_weights(tmp_path):
    first, log = _weights(tmp_path, "--seed", "7")
    again, _ = _weights(tmp_path, "--seed", "7")
    other, _ = _weights(tmp_path, "--seed", "8")
    assert first == again and first != other
    assert "--seed 7 seeds the initial weights" in log


def test_a_script_that_seeds_itself_keeps_its_weights_and_the_log_says_so(tmp_path):
    line = "keras.utils.set_random_seed(1)"
    plain, _ = _weights(tmp_path, seed_line=line)
    flagged, log = _weights(tmp_path, "--seed", "7", seed_line=line)
    assert plain == flagged
    assert "the script seeds the framework's generator itself" in log
