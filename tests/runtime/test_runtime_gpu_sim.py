"""The GPU path under Numba's CUDA simulator: sim_gpu_cases.py, run in a subprocess.

Numba reads NUMBA_ENABLE_CUDASIM when it is first imported, so the simulator cannot be switched on
inside this process without affecting every other test; the cases run in a child pytest instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import background_runs  # tests/background_runs.py
import pytest
from cuda_launch_log import check_launch_log, with_launch_log  # tests/cuda_launch_log.py

ROOT = Path(__file__).resolve().parents[2]

SIMULATED = background_runs.Command(lambda work: dict(
    args=[sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
          str(Path(__file__).with_name("sim_gpu_cases.py"))],
    cwd=ROOT, timeout=600,
    env=with_launch_log(dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT) + os.pathsep
                             + os.environ.get("PYTHONPATH", "")), work / "launches.jsonl")))


@pytest.mark.background(SIMULATED)
def test_gpu_cases_under_cuda_simulator():
    proc, work = SIMULATED.result()
    log = work / "launches.jsonl"
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"GPU simulator cases failed:\n{out[-6000:]}"
    assert " passed" in out and "skipped" not in out.splitlines()[-1], out[-2000:]
    check_launch_log(log)
