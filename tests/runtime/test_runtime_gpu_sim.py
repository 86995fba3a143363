"""The GPU path under Numba's CUDA simulator: sim_gpu_cases.py, run in a subprocess.

Numba reads NUMBA_ENABLE_CUDASIM when it is first imported, so the simulator cannot be switched on
inside this process without affecting every other test; the cases run in a child pytest instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cuda_launch_log import check_simulated_pytest, simulated_pytest  # tests/cuda_launch_log.py

SIMULATED = simulated_pytest(Path(__file__).with_name("sim_gpu_cases.py"), timeout=600)


@pytest.mark.background(SIMULATED)
def test_gpu_cases_under_cuda_simulator():
    check_simulated_pytest(SIMULATED)
