"""`-ll:gpu 1` under NUMBA_ENABLE_CUDASIM=1 makes progress at the simulator's speed, shows each step, and
says it is the simulator (with what a simulated CUDA thread costs)."""

import os
import re
import subprocess
import sys

import background_runs  # tests/background_runs.py
import pytest
from test_interrupt import TINY_MLP as INTERRUPT_MLP

TINY_MLP = INTERRUPT_MLP + 'print("done")\n'  # the same model as the Ctrl-C tests


def _spec(work):
    script = work / "tiny_mlp.py"
    script.write_text(TINY_MLP)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", HOME=str(work), FF_LOG_LEVEL="INFO",
               FF_CACHE_DIR=str(work / "cache"), PYTHONUNBUFFERED="1")
    # 8 steps take about 15 s here (2 loaded cores); the bound only catches a hang
    return dict(args=[sys.executable, str(script), "-ll:gpu", "1", "-p", "1"], timeout=300, env=env, cwd=str(work))


SIMULATED = background_runs.Command(_spec)


@pytest.mark.background(SIMULATED)
def test_tiny_mlp_on_the_simulator_shows_steps_and_names_the_simulator():
    try:
        proc, _ = SIMULATED.result()
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"8 steps of a tiny MLP on the simulator did not finish in 300 s:\n{e.stdout}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert re.search(r"GPU: CUDA simulator \(NUMBA_ENABLE_CUDASIM=1\): kernels run in Python, one Python thread "
                     r"per CUDA thread \(\d+ µs each here\), about [\d,]+× slower than a GPU", out), out[-3000:]
    assert re.search(r"CUDA simulator: 90 trainable weights, so a training step runs at least 180 simulated "
                     r"CUDA threads: at least \d+ s per step here", out), out[-3000:]
    assert [s.split(" (")[0] for s in proc.stdout.splitlines() if s.startswith("iter ")] == \
        [f"iter {i}/8" for i in range(1, 9)]
    assert "gpu0" in out.lower() and proc.stdout.strip().endswith("done")
