"""Drive the CUDA op tests (tests/flexflow_keras/ops/cuda) under the CUDA simulator in a subprocess: numba
reads NUMBA_ENABLE_CUDASIM at first import, so the simulator cannot be switched on in this process."""

from pathlib import Path

import pytest
from cuda_launch_log import check_simulated_pytest, simulated_pytest  # tests/cuda_launch_log.py

ROOT = Path(__file__).resolve().parents[3]

SIMULATED = simulated_pytest(ROOT / "tests" / "flexflow_keras" / "ops" / "cuda")


@pytest.mark.background(SIMULATED)
def test_cuda_ops_under_simulator():
    check_simulated_pytest(SIMULATED)
