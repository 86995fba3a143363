"""The GPU path under Numba's CUDA simulator: sim_gpu_cases.py, run in a subprocess.

Numba reads NUMBA_ENABLE_CUDASIM when it is first imported, so the simulator cannot be switched on
inside this process without affecting every other test; the cases run in a child pytest instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cuda_launch_log import check_launch_log, with_launch_log  # tests/cuda_launch_log.py

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_cases_under_cuda_simulator(tmp_path):
    log = tmp_path / "launches.jsonl"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get(
        "PYTHONPATH", ""))
    env = with_launch_log(env, log)
    cases = Path(__file__).with_name("sim_gpu_cases.py")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(cases)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"GPU simulator cases failed:\n{out[-6000:]}"
    assert " passed" in out and "skipped" not in out.splitlines()[-1], out[-2000:]
    check_launch_log(log)
