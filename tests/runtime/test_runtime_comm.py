"""runtime/comm.py without mpiexec: the batch shards, the launcher detection, and start() in a single
process (nothing happens; a launcher whose rank count MPI does not see is an error)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime import comm

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("n,size", [(64, 2), (65, 2), (7, 3), (3, 3), (10, 4)])
def test_shards_cover_the_batch_in_order(n, size):
    bounds = [comm.shard(n, size, r) for r in range(size)]
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
    sizes = [hi - lo for lo, hi in bounds]
    assert max(sizes) - min(sizes) <= 1 and sorted(sizes, reverse=True) == sizes


def test_launched_size_reads_the_launchers_variables(monkeypatch):
    for var in comm._LAUNCH_VARS:
        monkeypatch.delenv(var, raising=False)
    assert comm.launched_size() == 1
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    assert comm.launched_size() == 4


def test_a_single_process_has_no_world():
    assert comm.world() is None  # pytest is not started by mpiexec
    assert comm.host_cores() == (os.cpu_count() or 1)


def test_launcher_and_mpi_disagreeing_on_the_rank_count_is_an_error():
    pytest.importorskip("mpi4py", reason="the mpi extra is not installed (pip install -e '.[mpi]')")
    env = {k: v for k, v in os.environ.items() if k not in comm._LAUNCH_VARS}
    env["OMPI_COMM_WORLD_SIZE"] = "2"  # as if another MPI's launcher had started us: mpich sees 1 rank
    env["PYTHONPATH"] = str(ROOT)
    p = subprocess.run([sys.executable, "-c", "import flexflow_keras"], capture_output=True, text=True,
                       timeout=120, env=env, cwd=ROOT)
    assert p.returncode != 0
    assert "announced 2 ranks but mpi4py's MPI sees 1" in p.stderr, p.stderr[-2000:]


def test_ranks_on_one_host_get_gpus_of_their_own():
    assert comm.gpu_slice(0, 2) == [0, 1] and comm.gpu_slice(1, 2) == [2, 3] and comm.gpu_slice(3, 1) == [3]
    assert comm.assign_gpus(1) is None  # one process: nothing to share, CUDA_VISIBLE_DEVICES untouched
