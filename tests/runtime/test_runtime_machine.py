"""Machine: Legion flag parsing, processors, memories, capacities, affinities, GPU checks."""

from __future__ import annotations

import warnings

import pytest

import runtime as rt
from runtime import gpu
from runtime.machine import MB


def test_from_args_parses_legion_flags():
    m = rt.Machine.from_args(["-ll:cpu", "3", "-ll:gpu", "0", "-ll:util", "2", "-ll:zsize", "128",
                              "-ll:csize", "512", "--epochs", "2", "-lg:prof", "1"])
    assert [p.name for p in m.processors(rt.ProcKind.CPU)] == ["CPU0", "CPU1", "CPU2"]
    assert len(m.processors(rt.ProcKind.UTIL)) == 2 and not m.processors(rt.ProcKind.GPU)
    (sysmem,) = m.memories(rt.MemKind.SYSTEM)
    (zc,) = m.memories(rt.MemKind.ZERO_COPY)
    assert sysmem.capacity == 512 * MB and zc.capacity == 128 * MB
    assert sysmem.flag == "-ll:csize" and zc.flag == "-ll:zsize"
    assert m.profile is True


def test_parse_args_leaves_unknown_arguments():
    settings, rest = rt.parse_legion_args(["train.py", "-ll:cpu", "2", "-b", "64", "-lg:prof"])
    assert settings == {"cpus": 2, "profile": True}
    assert rest == ["train.py", "-b", "64"]
    settings, _ = rt.parse_legion_args(["-lg:prof", "0", "-lg:prof_logfile", "p.json"])
    assert settings == {"profile": False, "profile_logfile": "p.json"}


@pytest.mark.parametrize("argv, match", [
    (["-ll:cpu"], "expects an integer value after it"),
    (["-ll:cpu", "two"], "expects an integer value, received 'two'"),
    (["-ll:gpu", "-1"], "non-negative"),
    (["-ll:cpu", "0"], "at least one CPU"),
])
def test_bad_flags_are_clear_errors(argv, match):
    with pytest.raises(rt.MachineError, match=match):
        rt.Machine.from_args(argv)


def test_affinities_and_local_memories():
    m = rt.Machine(cpus=2, utils=1, zsize=16)
    cpu = m.processors(rt.ProcKind.CPU)[0]
    util = m.processors(rt.ProcKind.UTIL)[0]
    sysmem = m.memories(rt.MemKind.SYSTEM)[0]
    zc = m.memories(rt.MemKind.ZERO_COPY)[0]
    assert m.local_memory(cpu) == sysmem and m.local_memory(util) == sysmem
    assert m.can_address(cpu, zc) and set(m.addressable(cpu)) == {sysmem, zc}
    aff = m.affinity(cpu, sysmem)
    assert aff.bandwidth > 0 and aff.latency > 0
    assert all(a.bandwidth > 0 for a in m.affinities())
    ch = m.channel(sysmem, zc)
    assert ch.route == "direct" and ch.bandwidth > 0
    assert "2 CPU" in m.describe()


def test_too_many_gpus_is_an_error(monkeypatch):
    monkeypatch.setattr(gpu, "device_count", lambda: (0, "no CUDA driver"))
    with pytest.raises(rt.MachineError, match=r"-ll:gpu 2 asks for 2 GPU\(s\) but Numba sees 0.*-ll:gpu 0"):
        rt.Machine.from_args(["-ll:gpu", "2"])
    monkeypatch.setattr(gpu, "device_count", lambda: (1, ""))
    monkeypatch.setattr(gpu, "compiler_problem", lambda: "")
    with pytest.raises(rt.MachineError, match="Pass -ll:gpu 1 or fewer"):
        rt.Machine(gpus=2)


def test_a_toolchain_that_cannot_compile_kernels_is_an_error_at_start(monkeypatch):
    monkeypatch.setattr(gpu, "device_count", lambda: (1, ""))
    monkeypatch.setattr(gpu, "compiler_problem", lambda: "numba-cuda 0.30.4 cannot compile a CUDA kernel here")
    with pytest.raises(rt.MachineError, match=r"-ll:gpu 1: numba-cuda 0.30.4 cannot compile.*-ll:gpu 0"):
        rt.Machine.from_args(["-ll:gpu", "1"])


def test_the_compile_failure_names_numpy_when_numpy_lacks_a_function():
    why = gpu._explain_compile_failure(AttributeError("module 'numpy' has no attribute 'row_stack'"))
    assert "row_stack" in why and "pip install 'numpy<2.5'" in why
    why = gpu._explain_compile_failure(OSError("libnvvm.so: cannot open shared object file"))
    assert "libnvvm" in why and "numba-cuda[cu12]" in why


def test_small_grid_warnings_are_off_unless_asked_for(monkeypatch):
    from numba.cuda.core import config

    monkeypatch.setattr(config, "CUDA_LOW_OCCUPANCY_WARNINGS", 1)
    monkeypatch.setenv("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "1")
    gpu.quiet_small_grids()
    assert config.CUDA_LOW_OCCUPANCY_WARNINGS == 1  # the user's setting stands
    monkeypatch.delenv("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS")
    gpu.quiet_small_grids()
    assert config.CUDA_LOW_OCCUPANCY_WARNINGS == 0


def test_fsize_above_free_memory_is_an_error(monkeypatch):
    monkeypatch.setattr(gpu, "device_count", lambda: (1, ""))
    monkeypatch.setattr(gpu, "compiler_problem", lambda: "")
    monkeypatch.setattr(gpu, "device_info", lambda i: {"name": "FakeGPU", "free": 2048.0 * MB,
                                                       "total": 4096.0 * MB, "bandwidth": 5e11})
    with pytest.raises(rt.MachineError, match=r"-ll:fsize 4000 MB is above the free memory of GPU 0.*2048 MB free"):
        rt.Machine.from_args(["-ll:gpu", "1", "-ll:fsize", "4000"])
    m = rt.Machine(gpus=1)  # default: 90% of free memory
    (fb,) = m.memories(rt.MemKind.GPU_FB)
    assert fb.capacity == int(0.9 * 2048 * MB) // MB * MB and fb.flag == "-ll:fsize"
    g = m.processors(rt.ProcKind.GPU)[0]
    assert m.local_memory(g) == fb and m.affinity(g, fb).bandwidth == 5e11
    assert not m.can_address(g, m.memories(rt.MemKind.SYSTEM)[0])
    assert m.can_address(g, m.memories(rt.MemKind.ZERO_COPY)[0])


def test_gpus_present_but_unused_warns(monkeypatch):
    monkeypatch.setattr(gpu, "probe_device_count", lambda: 2)
    with pytest.warns(rt.CPUOnlyWarning, match="-ll:gpu 0: training will run on the CPU"):
        rt.Machine.from_args(["-ll:gpu", "0"])
    monkeypatch.setattr(gpu, "probe_device_count", lambda: 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt.Machine()


def test_a_bound_gpu_thread_skips_the_context_push_unless_another_device_is_current(monkeypatch):
    import threading

    stack, pushes = [], []

    class Device:
        def __init__(self, i):
            self.i = i

        def __enter__(self):
            stack.append(self.i)
            pushes.append(self.i)

        def __exit__(self, *exc):
            stack.pop()

    class FakeCuda:
        gpus = [Device(0), Device(1)]

        @staticmethod
        def select_device(i):
            stack[:] = [i]

    monkeypatch.setattr(gpu, "cuda", lambda: FakeCuda)
    seen = {}

    def worker():  # a GPU worker thread: bound once, for its lifetime
        gpu.select_device(0)
        with gpu.on_device(0):
            seen["plain"] = (stack[-1], len(pushes))
        with gpu.on_device(1), gpu.on_device(0):  # a fold for device 1 touching this device's buffer
            seen["nested"] = stack[-1]
        seen["after"] = stack[-1]

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == {"plain": (0, 0), "nested": 0, "after": 0}
    assert pushes == [1, 0]


@pytest.mark.parametrize("devices, bound", [([0], 0), ([0, 1], None), ([], None)])
def test_the_sequential_executor_binds_its_thread_to_the_one_gpu(monkeypatch, devices, bound):
    """On a one-GPU machine the issuing thread runs every GPU task: it is bound to the device as a
    threaded GPU worker is (no context push per task); with two GPUs, or none, it is not."""
    import threading

    from runtime.machine import Processor, ProcKind
    from runtime.workers import SequentialExecutor

    selected = []

    class FakeCuda:
        @staticmethod
        def select_device(i):
            selected.append(i)

    class Machine:
        def processors(self, kind=None):
            return [Processor(ProcKind.GPU, i, i, device=i) for i in devices]

    class Engine:
        def run(self, node):
            seen.append(getattr(gpu._bound, "device", None))

    monkeypatch.setattr(gpu, "cuda", lambda: FakeCuda)
    seen: list = []
    ex = SequentialExecutor(Engine(), Machine(), None)

    def issue():
        ex.enqueue("a")
        ex.enqueue("b")

    t = threading.Thread(target=issue)
    t.start()
    t.join()
    assert seen == [bound, bound]
    assert selected == ([bound] if bound is not None else [])  # bound once, not per task
