"""Drive the CUDA kernel tests (tests/kernels/cuda) under the CUDA simulator in a subprocess: numba reads
NUMBA_ENABLE_CUDASIM when it is first imported, so the simulator cannot be switched on in this process."""

import os
import sys
from pathlib import Path

import background_runs  # tests/background_runs.py
import pytest
from cuda_launch_log import check_launch_log, with_launch_log  # tests/cuda_launch_log.py

ROOT = Path(__file__).resolve().parents[2]

SIMULATED = background_runs.Command(lambda work: dict(
    args=[sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-W", "ignore::RuntimeWarning",
          str(ROOT / "tests" / "kernels" / "cuda")],
    cwd=ROOT, timeout=900,
    env=with_launch_log(dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT)), work / "launches.jsonl")))


@pytest.mark.background(SIMULATED)
def test_cuda_kernels_under_simulator():
    proc, work = SIMULATED.result()
    log = work / "launches.jsonl"
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout.splitlines()[-1], proc.stdout[-2000:]
    check_launch_log(log)
