"""benchmarks/gpu_check.py refuses, measuring nothing, where there is no real GPU (here: the simulator)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_refuses_under_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Nothing was measured" in proc.stderr
    assert "TFLOP" not in proc.stdout and "samples/s" not in proc.stdout
