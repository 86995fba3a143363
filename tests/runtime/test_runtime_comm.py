"""runtime/comm.py without mpiexec: the batch shards, the launcher detection, and start() in a single
process (nothing happens; a launcher whose rank count MPI does not see is an error)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
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


def test_host_cores_are_the_cores_this_process_may_run_on(monkeypatch):
    """`taskset -c 0 python train.py` (or a container's cpuset) leaves one core: the threading policy and
    the search's machine model see one, not every core of the host."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert comm.os_cores() == 1 and comm.host_cores() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert comm.host_cores() == 3


def test_ranks_bound_to_their_own_cores_are_not_shared_out_again(monkeypatch):
    """Two ranks on an 8-core host: unbound, each gets 4; bound by the launcher to 4 each, still 4."""
    class World:
        local_ranks = 2

    monkeypatch.setattr(comm, "_world", World())
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert comm.host_cores() == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {4, 5, 6, 7}, raising=False)
    assert comm.host_cores() == 4


def test_a_single_process_has_no_world():
    assert comm.world() is None  # pytest is not started by mpiexec
    assert comm.host_cores() == comm.os_cores()


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


class _Info:
    def __init__(self, kinds):
        self.kinds = kinds

    def Get(self, key):  # noqa: N802 - mpi4py's spelling
        return self.kinds if key == "mpi_memory_alloc_kinds" else None

    def Free(self):  # noqa: N802
        pass


class _Comm:
    """What a Reducer and cuda_aware use of an mpi4py communicator: it records what Iallreduce got."""

    def __init__(self, kinds=None):
        self.kinds, self.got = kinds, []

    def Get_info(self):  # noqa: N802
        return _Info(self.kinds)

    def Dup(self):  # noqa: N802
        return self

    def Iallreduce(self, sendbuf, recvbuf, op=None):  # noqa: N802
        self.got.append(recvbuf)
        return type("Done", (), {"Test": lambda self: True})()


@pytest.mark.parametrize("kinds,aware", [("mpi,system", False), (None, False), ("mpi,system,cuda:device", True),
                                         ("mpi,system,cuda", True), ("mpi,system,rocm", False)])
def test_cuda_awareness_is_read_from_the_memory_alloc_kinds(monkeypatch, kinds, aware):
    monkeypatch.delenv("FF_MPI_CUDA_AWARE", raising=False)
    assert comm.cuda_aware(_Comm(kinds)) is aware
    monkeypatch.setenv("FF_MPI_CUDA_AWARE", "0" if aware else "1")  # the override wins
    assert comm.cuda_aware(_Comm(kinds)) is not aware


class _DeviceArray:
    """A device array as the Reducer sees one: copy_to_host / copy_to_device, nbytes."""

    def __init__(self, values):
        self.values = np.array(values, np.float32)
        self.nbytes = self.values.nbytes

    def copy_to_host(self):
        return self.values.copy()

    def copy_to_device(self, host):
        self.values[...] = host


@pytest.mark.parametrize("aware,simulated", [(True, False), (False, False), (True, True)])
def test_device_buffers_go_to_mpi_in_place_only_with_a_cuda_aware_mpi_on_a_real_gpu(monkeypatch, aware, simulated):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1" if simulated else "0")
    monkeypatch.setattr(comm, "_stream_done", lambda: None)  # no GPU here: the stream wait is not exercised
    MPI = type("MPI", (), {"IN_PLACE": object(), "SUM": "sum"})
    world = type("W", (), {"MPI": MPI, "cuda_aware": aware, "channel": lambda self: _Comm(),
                           "sums": comm.SumQueue(MPI)})()
    red = comm.Reducer(world, "g")
    dev = _DeviceArray([1.0, 2.0])
    red.start(dev)
    red.finish(dev)
    (got,) = red.comm.got
    if aware and not simulated:
        assert got is dev  # summed in place on the device
    else:
        assert isinstance(got, np.ndarray) and got is not dev.values  # staged through host memory
