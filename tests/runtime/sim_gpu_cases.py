"""GPU-path cases, run under NUMBA_ENABLE_CUDASIM=1 in a subprocess by test_runtime_gpu_sim.py.

(Numba reads the simulator switch when it is first imported, so these cannot share a process with
tests that use the real numba.cuda. Run by hand: NUMBA_ENABLE_CUDASIM=1 python -m pytest
tests/runtime/sim_gpu_cases.py)
"""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run through test_runtime_gpu_sim.py)", allow_module_level=True)

from numba import cuda  # noqa: E402

import runtime as rt  # noqa: E402
from runtime import gpu  # noqa: E402

assert cuda.simulator_enabled if hasattr(cuda, "simulator_enabled") else gpu.simulator_requested()

MB = 1 << 20


def host(x):
    """A host copy of a device array view (contiguous or not), or of a zero-copy (host) array."""
    if isinstance(x, np.ndarray):
        return np.array(x)
    out = np.empty(x.shape, dtype=x.dtype)
    gpu.copy_device_to_host(out, x, tuple(slice(0, s) for s in x.shape))
    return out


def put(x, value):
    if isinstance(x, np.ndarray):
        x[...] = value
        return
    gpu.copy_host_to_device(x, tuple(slice(0, s) for s in x.shape), np.ascontiguousarray(value))


seen_types: list = []


@rt.task(privileges=[rt.RO, rt.WD])
def scale(x, y, f):
    y[...] = x * f


@scale.variant(rt.ProcKind.GPU)
def scale_gpu(x, y, f):
    seen_types.append((type(x).__name__, type(y).__name__))
    put(y, host(x) * f)


@rt.task(privileges=[rt.RO, rt.Reduce("+")])
def colsum(x, g):
    g += x.sum(axis=0)


@colsum.variant(rt.ProcKind.GPU)
def colsum_gpu(x, g):
    put(g, host(g) + host(x).sum(axis=0))


@rt.task(privileges=[rt.RO])
def total(x):
    return float(x.sum())


@total.variant(rt.ProcKind.GPU)
def total_gpu(x):
    return float(host(x).sum())


@rt.task(privileges=[rt.RW])
def cpu_only(x):
    x += 1


def gpu_machine(**kw):
    kw.setdefault("cpus", 2)
    return rt.Machine(gpus=1, **kw)


# -- machine ---------------------------------------------------------------------------------------
def test_machine_with_the_simulated_gpu():
    m = rt.Machine.from_args(["-ll:cpu", "2", "-ll:gpu", "1", "-ll:fsize", "64"])
    (g,) = m.processors(rt.ProcKind.GPU)
    (fb,) = m.memories(rt.MemKind.GPU_FB)
    assert g.device == 0 and fb.capacity == 64 * MB and m.local_memory(g) == fb
    assert m.gpu_devices[0]["name"]
    assert rt.Machine(gpus=1).memories(rt.MemKind.GPU_FB)[0].capacity == 1024 * MB  # simulator default


def test_too_many_gpus_and_unused_gpu_warning():
    with pytest.raises(rt.MachineError, match=r"-ll:gpu 2 asks for 2 GPU\(s\) but Numba sees 1"):
        rt.Machine.from_args(["-ll:gpu", "2"])
    with pytest.warns(rt.CPUOnlyWarning, match="simulator"):
        rt.Machine.from_args(["-ll:gpu", "0"])


# -- copies and invalidation -----------------------------------------------------------------------
def test_copies_between_system_and_framebuffer(executor):
    seen_types.clear()
    with rt.Runtime(gpu_machine(), executor=executor) as rtm:
        X = rt.Region((8, 4), np.float32, name="x")
        Y = rt.Region((8, 4), np.float32, name="y")
        P, Q = rt.Partition.equal(X, (2, 1)), rt.Partition.equal(Y, (2, 1))
        data = np.arange(32, dtype=np.float32).reshape(8, 4)
        rtm.write(X, data)
        rtm.index_launch(scale, 2, P, Q, 2.0).wait()     # GPU variant: x copied in, y written there
        assert seen_types and all("CUDA" in a and "CUDA" in b for a, b in seen_types)
        assert rtm.stats.copies == 2 and rtm.stats.copy_bytes == X.nbytes
        np.testing.assert_array_equal(rtm.read(Y), 2 * data)   # copied back to the host
        assert rtm.stats.copies == 4
        np.testing.assert_array_equal(rtm.read(Y), 2 * data)   # host copy still valid: no copy
        assert rtm.stats.copies == 4
        # the whole of x on the GPU: a new instance, filled from the two halves already there
        assert rtm.launch(total, X).get() == data.sum()
        assert rtm.stats.copies == 6 and rtm.stats.copy_bytes == 3 * X.nbytes
        assert rtm.launch(total, X).get() == data.sum()        # now valid there: no copy
        assert rtm.stats.copies == 6
        rtm.write(X, data + 1)                                 # host write invalidates the GPU copies
        assert rtm.launch(total, X).get() == (data + 1).sum()
        assert rtm.stats.copies == 7
        assert rtm.memory_usage()["gpu0_fb"][0] == 2 * X.nbytes + Y.nbytes


def test_non_contiguous_boxes_copy_run_by_run(executor):
    with rt.Runtime(gpu_machine(), executor=executor) as rtm:
        X = rt.Region((6, 6), np.float64, name="x")
        Y = rt.Region((6, 6), np.float64, name="y")
        cols_x, cols_y = rt.Partition.equal(X, (1, 3)), rt.Partition.equal(Y, (1, 3))
        data = np.arange(36.0).reshape(6, 6)
        rtm.write(X, data)
        rtm.launch(scale, X, Y, 1.0)                          # whole instances on the GPU
        rtm.index_launch(cpu_only, (1, 3), cols_y)            # CPU updates column blocks on the host
        rtm.index_launch(scale, (1, 3), cols_y, cols_x, 3.0)  # back on the GPU, column by column
        np.testing.assert_array_equal(rtm.read(X), 3 * (data + 1))


def test_gpu_reductions_in_place_and_across_memories(executor):
    class Mixed(rt.DefaultMapper):
        def select_processor(self, task_info, point, machine):
            if task_info.name == "colsum" and task_info.index_launch:
                kind = rt.ProcKind.GPU if point[0] % 2 == 0 else rt.ProcKind.CPU
                return machine.processors(kind)[0]
            return super().select_processor(task_info, point, machine)

    data = np.arange(24.0).reshape(8, 3)
    with rt.Runtime(gpu_machine(), executor=executor, mapper=Mixed()) as rtm:
        X = rt.Region(data.shape, np.float64, name="x")
        G = rt.Region((3,), np.float64, name="g")
        rtm.write(X, data)
        rtm.fill(G, 0.0)
        rtm.launch(colsum, X, G)                              # lone reducer on the GPU: in place
        assert rtm.stats.folds == 0
        np.testing.assert_array_equal(rtm.read(G), data.sum(0))
        rtm.fill(G, 1.0)
        rtm.index_launch(colsum, 4, rt.Partition.equal(X, (4, 1)), G)   # GPU, CPU, GPU, CPU
        np.testing.assert_array_equal(rtm.read(G), 1.0 + data.sum(0))
        # points 0 and 2 reduce in place on the GPU; 1 and 3 share one CPU buffer: a single fold
        assert rtm.stats.folds == 1


# -- capacity -----------------------------------------------------------------------------------------
def test_framebuffer_oom_names_everything(executor):
    with rt.Runtime(gpu_machine(fsize=1), executor=executor) as rtm:
        X = rt.Region((512, 1024), np.float32, name="activations")   # 2 MB
        rtm.fill(X, 1.0)
        with pytest.raises(rt.OutOfMemoryError) as ei:
            rtm.launch(total, X)
        msg = str(ei.value)
        assert "gpu0_fb" in msg and "region 'activations' needs 2097152 bytes" in msg
        assert "-ll:fsize" in msg and "only 1048576 bytes are free" in msg
        assert ei.value.flag == "-ll:fsize"


def test_framebuffer_evicts_clean_instances(executor):
    with rt.Runtime(gpu_machine(fsize=1), executor=executor) as rtm:
        a = rt.Region((600_000,), np.uint8, name="a")
        b = rt.Region((600_000,), np.uint8, name="b")
        rtm.fill(a, 1)
        rtm.fill(b, 2)
        assert rtm.launch(total, a).get() == 600_000
        assert rtm.launch(total, b).get() == 1_200_000          # a's copy on the GPU is evicted
        assert rtm.memory_usage()["gpu0_fb"][0] == 600_000


# -- mapper validation ---------------------------------------------------------------------------------
def test_mapper_errors_with_gpus():
    class ToGPU(rt.Mapper):
        def select_processor(self, task_info, point, machine):
            return machine.processors(rt.ProcKind.GPU)[0]

        def select_memory(self, task_info, point, processor, arg_index, region, privilege):
            return task_info.machine.local_memory(processor)

    class CPUInFB(rt.DefaultMapper):
        def select_memory(self, task_info, point, processor, arg_index, region, privilege):
            return task_info.machine.memories(rt.MemKind.GPU_FB)[0]

    R = rt.Region((4,), np.float64, name="r")
    with rt.Runtime(gpu_machine(), executor="sequential", mapper=ToGPU()) as rtm:
        with pytest.raises(rt.MappingError, match=r"ToGPU\.select_processor chose GPU0 for task 'cpu_only' "
                                                  r"point \(\), but the task has no GPU variant"):
            rtm.launch(cpu_only, R)
    with rt.Runtime(gpu_machine(), executor="sequential", mapper=CPUInFB()) as rtm:
        with pytest.raises(rt.MappingError, match=r"CPUInFB\.select_memory placed argument 0 \(r\) of task "
                                                  r"'cpu_only' point \(\) in gpu0_fb, which CPU\d cannot address"):
            rtm.launch(cpu_only, R)


def test_gpu_task_with_zero_copy_argument(executor):
    class ZC(rt.DefaultMapper):
        def select_memory(self, task_info, point, processor, arg_index, region, privilege):
            return task_info.machine.memories(rt.MemKind.ZERO_COPY)[0]

    with rt.Runtime(gpu_machine(), executor=executor, mapper=ZC()) as rtm:
        X = rt.Region((4, 2), np.float64)
        rtm.fill(X, 2.0)
        assert rtm.launch(total, X).get() == 16.0
        assert rtm.memory_usage()["zcmem"][0] == X.nbytes


# -- tracing with copies -------------------------------------------------------------------------------
def test_traced_gpu_step_replays_with_fresh_copies(executor):
    with rt.Runtime(gpu_machine(), executor=executor) as rtm:
        X = rt.Region((8, 3), np.float64, name="x")
        Y = rt.Region((8, 3), np.float64, name="y")
        G = rt.Region((3,), np.float64, name="g")
        P, Q = rt.Partition.equal(X, (2, 1)), rt.Partition.equal(Y, (2, 1))
        for step in range(4):
            batch = np.full((8, 3), float(step + 1))
            with rtm.trace("gpu_step"):
                rtm.write(X, batch)                       # host write each step: copied in again
                rtm.fill(G, 0.0)
                rtm.index_launch(scale, 2, P, Q, 2.0)
                rtm.index_launch(colsum, 2, Q, G)
                f = rtm.launch(total, G)
            assert f.get() == 2 * 24 * (step + 1)
        # the first run moved x, y and g to the GPU, so its home-array bindings are stale: the second
        # run records again, and the last two replay
        assert rtm.stats.recorded_traces == 2 and rtm.stats.replayed_traces == 2
        assert rtm.stats.trace_mismatches == 0


def test_marks_passed_through_barriers_and_folds_stay_one_per_stream(executor, monkeypatch):
    # Barriers and folds pass on the GPU marks they waited for. Appended without merging, the lists
    # multiplied at every level: a 3-step fit on one GPU had a task wait on 1176 events, and on a real
    # GPU the threaded executor's fit never finished. With one GPU stream, every wait is on one mark.
    from runtime import streams

    longest = [0]
    device_wait, host_wait = streams.device_wait, streams.host_wait

    def counting_device_wait(marks, stream):
        longest[0] = max(longest[0], len(marks))
        device_wait(marks, stream)

    def counting_host_wait(marks):
        longest[0] = max(longest[0], len(marks))
        host_wait(marks)

    monkeypatch.setattr(streams, "device_wait", counting_device_wait)
    monkeypatch.setattr(streams, "host_wait", counting_host_wait)

    class Mixed(rt.DefaultMapper):  # CPU and GPU points of one reduction: a fold joins them
        def select_processor(self, task_info, point, machine):
            if task_info.name == "colsum" and task_info.index_launch:
                kind = rt.ProcKind.GPU if point[0] % 2 == 0 else rt.ProcKind.CPU
                return machine.processors(kind)[0]
            return super().select_processor(task_info, point, machine)

    with rt.Runtime(gpu_machine(), executor=executor, mapper=Mixed()) as rtm:
        X = rt.Region((8, 3), np.float64, name="x")
        Y = rt.Region((8, 3), np.float64, name="y")
        G = rt.Region((3,), np.float64, name="g")
        P, Q = rt.Partition.equal(X, (4, 1)), rt.Partition.equal(Y, (4, 1))
        rtm.fill(X, 1.0)
        for _ in range(12):
            with rtm.trace("step"):
                rtm.fill(G, 0.0)
                rtm.index_launch(scale, 4, P, Q, 2.0)
                rtm.index_launch(colsum, 4, Q, G)
                rtm.index_launch(scale, 4, Q, P, 0.5)
        assert rtm.read(G).tolist() == [16.0, 16.0, 16.0]
    assert longest[0] == 1, longest


# -- random programs across CPU and GPU --------------------------------------------------------------
def _gpu_bodies():
    from test_runtime_properties import MOD, ONE, TWO

    def affine_gpu(x, a, b):
        put(x, (host(x) * a + b) % MOD)

    def set_gpu(x, c):
        put(x, np.full(x.shape, c, dtype=x.dtype))

    def copysum_gpu(s, x, a):
        put(x, (host(x) + int(host(s).sum()) * a) % MOD)

    def red_add_gpu(g, c):
        put(g, host(g) + c)

    def red_add_from_gpu(s, g, c):
        put(g, host(g) + (int(host(s).sum()) + c) % 13)

    def red_max_gpu(g, c):
        put(g, np.maximum(host(g), c))

    def read_gpu(x):
        return int(host(x).sum())

    bodies = {"affine": affine_gpu, "set": set_gpu, "copysum": copysum_gpu, "red_add": red_add_gpu,
              "red_add_from": red_add_from_gpu, "red_max": red_max_gpu, "read": read_gpu}
    for name, t in {**ONE, **TWO}.items():
        t.variant(rt.ProcKind.GPU)(bodies[name])


class Scatter(rt.DefaultMapper):
    """CPU or GPU by a hash of the decision; memories are then the processor's own."""

    def select_processor(self, task_info, point, machine):
        kinds = [k for k in (rt.ProcKind.CPU, rt.ProcKind.GPU) if k in task_info.variants]
        kind = kinds[zlib.crc32(repr((task_info.name, point)).encode()) % len(kinds)]
        return machine.processors(kind)[0]


def test_random_programs_across_cpu_and_gpu_match_sequential(executor):
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    import test_runtime_properties as props

    _gpu_bodies()

    @settings(max_examples=25, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(program=props.programs())
    def check(program):
        shapes, parts, ops = program
        ref_data, ref_values = props.run_reference(shapes, parts, ops, repeats=2)
        with rt.Runtime(gpu_machine(), executor=executor, mapper=Scatter()) as rtm:
            data, values = props.run_runtime(rtm, shapes, parts, ops, repeats=2, traced=True)
        for got, want in zip(data, ref_data, strict=True):
            np.testing.assert_array_equal(got, want)
        assert values == ref_values

    check()


# -- streams and events: GPU tasks enqueue on their processor's stream and nothing waits on the host
#    until a value is read. Deferred streams run queued kernels only when an event or a host wait drains
#    them, so a missing wait leaves the host reading stale data.

@cuda.jit
def _add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


@cuda.jit
def _double(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2


@rt.task(privileges=[rt.RW])
def add_one(x):
    x += 1


@add_one.variant(rt.ProcKind.GPU)
def add_one_gpu(x):
    from kernels.gpu import flat, launch

    launch(_add_one, x.size, flat(x))


@rt.task(privileges=[rt.RW])
def double(x):
    x *= 2


@double.variant(rt.ProcKind.GPU)
def double_gpu(x):
    from kernels.gpu import flat, launch

    launch(_double, x.size, flat(x))


@rt.task(privileges=[rt.RO])
def host_sum(x):
    return float(x.sum())


@pytest.fixture
def deferred_streams():
    from runtime.streams import DeferredStream, cuda_stream

    gpu.use_stream_factory(DeferredStream)
    yield
    gpu.use_stream_factory(cuda_stream)


def test_gpu_tasks_order_through_streams_and_the_host_waits_only_to_read(executor, deferred_streams):
    with rt.Runtime(gpu_machine(), executor=executor) as rtm:
        X = rt.Region((8,), np.float32, name="x")
        rtm.launch(add_one, X)   # x = 1 (queued on the GPU processor's stream)
        rtm.launch(double, X)    # x = 2 (same stream, after it)
        rtm.launch(add_one, X)   # x = 3
        # A CPU task reads x: it must wait for the GPU tasks' events before its copy to host memory;
        # without that wait it would read the zeros the copy-in left (0.0) or a partial result.
        assert rtm.launch(host_sum, X).get() == 3.0 * 8
        rtm.launch(double, X)    # x = 6, then a host read through fence + a GPU-side read
        rtm.fence()
        assert rtm.launch(host_sum, X).get() == 6.0 * 8


def test_a_copy_between_instances_of_one_gpu_follows_the_queued_writer_of_its_source(executor, deferred_streams):
    """x is written on the GPU (queued), then a column of it is updated by a GPU task in an instance of its
    own: the device-to-device copy into that instance goes on the stream after the writer (copied at
    once instead, it took the zeros the queued writer had not yet replaced)."""
    with rt.Runtime(gpu_machine(), executor=executor) as rtm:
        X = rt.Region((8, 2), np.float32, name="x")
        rtm.fill(X, 0.0)
        rtm.launch(add_one, X)                            # x = 1 everywhere (queued)
        cols = rt.Partition.equal(X, (1, 2))
        rtm.launch(add_one, cols[0, 0])                   # column 0: 2
        out = rtm.read(X)
        assert (out[:, 0] == 2).all() and (out[:, 1] == 1).all(), out


@rt.task(privileges=[rt.RW])
def bump(x):
    x += 1


@bump.variant(rt.ProcKind.GPU)
def bump_gpu(x):
    put(x, host(x) + 1)


def test_a_dead_regions_framebuffer_instance_does_not_block_the_next_region(executor):
    """A finished GPU task no longer holds its copies (each holds its instance): the last one a worker ran
    kept a dead region's only framebuffer copy charged, and the next region ran out of memory."""
    import gc

    with rt.Runtime(gpu_machine(fsize=1), executor=executor) as rtm:
        a = rt.Region((600_000,), np.uint8, name="a")
        rtm.fill(a, 1)
        rtm.launch(bump, a)   # valid only in gpu0_fb now
        rtm.fence()
        del a
        gc.collect()
        b = rt.Region((600_000,), np.uint8, name="b")
        rtm.fill(b, 2)
        assert rtm.launch(total, b).get() == 1_200_000
