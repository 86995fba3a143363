"""A waiting thread runs ready points of idle processors (threaded executor, `ThreadedExecutor.help`):
with the worker's settings, one point per processor at a time, and Ctrl-C in such a body leaves the
runtime serving."""

from __future__ import annotations

import threading
import time
import types

import numpy as np
import pytest

import runtime as rt
from runtime import fpenv, graph


@rt.task(privileges=[rt.RW])
def bump(x):
    x += 1
    return threading.current_thread().name


@rt.task
def settings():
    nb = __import__("numba")
    return (threading.current_thread().name, fpenv.control_word(), nb.get_num_threads(), graph.in_worker())


def _chain(rtm, region, n):
    """n read-write tasks on one region, the host waiting for each."""
    return [rtm.launch(bump, region).get() for _ in range(n)]


def test_a_waiting_thread_runs_ready_points():
    R = rt.Region((4,), np.float64)
    with rt.Runtime(rt.Machine(cpus=2, utils=1), executor="threaded") as rtm:
        rtm.fill(R, 0.0)
        names = _chain(rtm, R, 50)
        assert (rtm.read(R) == 50).all()
    # the host takes a point it just made ready before a parked worker can wake for it (the worker
    # needs the GIL the host holds); over 50 waits it does at least once
    assert threading.current_thread().name in names, names


def test_the_helping_thread_has_the_workers_settings_and_gets_its_own_back():
    nb = pytest.importorskip("numba")
    before_word, before_threads = fpenv.control_word(), nb.get_num_threads()
    with rt.Runtime(rt.Machine(cpus=2, utils=0), executor="threaded") as rtm:
        per_worker = rtm.policy.threads_per_worker
        seen = [rtm.launch(settings).get() for _ in range(50)]
    on_host = [s for s in seen if s[0] == threading.current_thread().name]
    assert on_host, "no point ran on the waiting thread"
    for _, word, threads, in_worker in on_host + [s for s in seen if s not in on_host]:
        assert in_worker
        assert threads == min(per_worker, nb.config.NUMBA_NUM_THREADS)
        if fpenv.supported():
            assert fpenv.flushes(word)
    assert fpenv.control_word() == before_word
    assert nb.get_num_threads() == before_threads
    assert not graph.in_worker()


class _Occupancy:
    """The most points of one processor seen running at the same time."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now: dict = {}
        self.most = 0


OCC = _Occupancy()


@rt.task(privileges=[rt.RW])
def occupy(x, proc_name, seconds):
    with OCC.lock:
        OCC.now[proc_name] = OCC.now.get(proc_name, 0) + 1
        OCC.most = max(OCC.most, OCC.now[proc_name])
    time.sleep(seconds)  # outside the GIL: another thread could start a second point meanwhile
    x += 1
    with OCC.lock:
        OCC.now[proc_name] -= 1


def test_a_processor_runs_one_point_at_a_time_while_the_host_helps():
    OCC.now.clear()
    OCC.most = 0
    regions = [rt.Region((2,), np.float64, name=f"r{i}") for i in range(4)]
    with rt.Runtime(rt.Machine(cpus=2, utils=0), executor="threaded") as rtm:
        cpus = rtm.machine.processors(rt.ProcKind.CPU)
        for r in regions:
            rtm.fill(r, 0.0)
        for rep in range(10):
            futs = []
            for i, r in enumerate(regions):  # independent chains, two per processor
                p = cpus[i % 2]
                futs += [rtm.launch(occupy, r, p.name, 0.0005, tag=(p,)) for _ in range(3)]
            futs[rep % len(futs)].get()  # the host helps, then the workers finish the rest
            rtm.fence()
        assert all((rtm.read(r) == 30).all() for r in regions)
    assert OCC.most == 1


@rt.task(priority=-1)
def late(log):
    log.append("update")


@rt.task
def early(log):
    log.append("forward")


def _update_then_forward(rtm):
    """Issue an update (negative priority) then a forward on the one processor and wait for the forward
    only; returns (the order they ran in so far, the update's future)."""
    log: list = []
    update = rtm.launch(late, log)
    rtm.launch(early, log).get()
    return log, update


def test_points_the_host_takes_keep_the_priority_order():
    # a negative-priority point waits behind the other ready points of its processor, whoever runs them
    with rt.Runtime(rt.Machine(cpus=1, utils=0), executor="threaded") as rtm:
        for _ in range(20):
            log, update = _update_then_forward(rtm)
            update.get()
            if log[0] == "forward":
                return
    pytest.fail("the negative-priority point always ran first")


def test_a_point_the_host_deferred_is_run_by_its_worker_without_another_wait():
    # the host set the update aside to run the forward first and then stopped helping: the processor's
    # parked worker must run the update on its own (nobody waits for it)
    with rt.Runtime(rt.Machine(cpus=1, utils=0), executor="threaded") as rtm:
        for _ in range(20):
            _, update = _update_then_forward(rtm)
            deadline = time.monotonic() + 5.0
            while not update.done() and time.monotonic() < deadline:
                time.sleep(0.001)
            assert update.done(), "a deferred point was left in its queue"


class _Interrupter:
    armed = True


@rt.task
def interrupted():
    if _Interrupter.armed and threading.current_thread() is threading.main_thread():
        _Interrupter.armed = False
        raise KeyboardInterrupt
    return "ran"


def test_ctrl_c_in_a_body_the_host_ran_leaves_the_runtime_serving():
    _Interrupter.armed = True
    R = rt.Region((4,), np.float64)
    with rt.Runtime(rt.Machine(cpus=2, utils=0), executor="threaded") as rtm:
        rtm.fill(R, 0.0)
        for _ in range(50):
            try:
                assert rtm.launch(interrupted).get() == "ran"
            except KeyboardInterrupt:
                break
        else:
            pytest.skip("no point of the 50 ran on the waiting thread")
        assert not rtm.engine.cancelled
        assert _chain(rtm, R, 3) and (rtm.read(R) == 3).all()


def test_a_body_the_host_runs_has_a_workers_numpy_error_state():
    # NumPy's error state is a context variable of the calling thread: the program's np.errstate must not
    # decide whether a point fails (on a worker it has the defaults)
    @rt.task
    def underflow():
        x = np.array([1e-30], np.float32)
        return threading.current_thread().name, float((x * x)[0])

    with rt.Runtime(rt.Machine(cpus=2, utils=0), executor="threaded") as rtm, np.errstate(all="raise"):
        seen = [rtm.launch(underflow).get() for _ in range(50)]
    assert any(name == threading.current_thread().name for name, _ in seen)
    assert all(v == 0.0 for _, v in seen)


def test_a_point_taken_but_not_started_when_ctrl_c_lands_goes_back_to_its_worker(monkeypatch):
    from runtime import workers

    class Interrupted(workers.ThreadedExecutor):
        armed = False

        def _help_run(self, node):
            if Interrupted.armed:  # the SIGINT lands after the point left its queue, before it runs
                Interrupted.armed = False
                raise KeyboardInterrupt
            super()._help_run(node)

    monkeypatch.setitem(workers.EXECUTORS, "threaded", Interrupted)  # the dict runtime.Runtime reads
    R = rt.Region((4,), np.float64)
    with rt.Runtime(rt.Machine(cpus=2, utils=0), executor="threaded") as rtm:
        rtm.fill(R, 0.0)
        rtm.fence()
        Interrupted.armed = True
        futures = []
        for _ in range(50):
            futures.append(rtm.launch(bump, R))
            try:
                futures[-1].get()
            except KeyboardInterrupt:
                break
        else:
            pytest.skip("no point of the 50 was taken by the waiting thread")
        assert rtm.engine.fence(timeout=10.0), "the taken point was lost: nothing will ever complete it"
        assert not rtm.engine.cancelled
        assert futures[-1].get().startswith("runtime-")  # its worker ran it
        assert (rtm.read(R) == len(futures)).all()


def test_no_helping_where_gpus_are():
    pytest.importorskip("numba")
    from runtime.workers import ThreadedExecutor

    class P:
        def __init__(self, uid, kind):
            self.uid, self.kind, self.name, self.device = uid, kind, f"p{uid}", 0 if kind is rt.ProcKind.GPU else None

    class M:
        def __init__(self, kinds):
            self.procs = [P(i, k) for i, k in enumerate(kinds)]

        def processors(self, kind=None):
            return [p for p in self.procs if kind is None or p.kind is kind]

    class Policy:
        threads_per_worker = 1

        def apply_in_worker(self):
            pass

    engine = types.SimpleNamespace(run=lambda node: None)
    cpu_only = ThreadedExecutor(engine, M([rt.ProcKind.CPU, rt.ProcKind.UTIL]), Policy())
    with_gpu = ThreadedExecutor(engine, M([rt.ProcKind.CPU, rt.ProcKind.GPU]), Policy())  # never bound here
    try:
        assert cpu_only._helped == [0, 1]
        assert with_gpu._helped == []
    finally:
        assert cpu_only.shutdown(5.0) and with_gpu.shutdown(5.0)


@rt.task(privileges=[rt.RW])
def bump_then_interrupt(x):
    x += 1
    if _Interrupter.armed and threading.current_thread() is threading.main_thread():
        _Interrupter.armed = False
        raise KeyboardInterrupt
    return threading.current_thread().name


def test_ctrl_c_in_a_chain_the_host_runs_releases_its_processor():
    # Ctrl-C in a point of a chain the waiting host runs must leave that processor's lock free: the
    # worker and later waits go on
    R = rt.Region((4,), np.float64)
    host = threading.current_thread().name
    with rt.Runtime(rt.Machine(cpus=1, utils=0), executor="threaded") as rtm:
        rtm.fill(R, 0.0)
        for _ in range(30):
            _Interrupter.armed = False
            first = rtm.launch(bump, R)
            rest = [rtm.launch(bump_then_interrupt, R) for _ in range(5)]
            _Interrupter.armed = True
            try:
                names = [first.get()] + [f.get() for f in rest]
            except KeyboardInterrupt:
                break
            if host not in names:
                continue
        else:
            pytest.skip("no point of the chain ran on the waiting thread")
        assert not rtm.engine.cancelled
        R2 = rt.Region((4,), np.float64)  # R's later users fail with the interrupted point (cancelled)
        rtm.fill(R2, 0.0)
        done = threading.Event()
        t = threading.Thread(target=lambda: (_chain(rtm, R2, 3), done.set()), daemon=True)
        t.start()
        assert done.wait(10.0), "the processor stayed locked after Ctrl-C"
        assert (rtm.read(R2) == 3).all()


def test_the_helping_thread_sets_numbas_thread_count_once_per_runtime(monkeypatch):
    # each numba.set_num_threads releases the GIL, and getting it back while a worker runs Python code
    # cost a GAN loop 33 calls and 4-9 ms per iteration when the count was set and restored per wait
    nb = pytest.importorskip("numba")
    if nb.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one Numba thread: there is no limit to set")
    host, calls, real = threading.current_thread().name, [], nb.set_num_threads

    def counted(n):
        calls.append((threading.current_thread().name, n))
        real(n)

    monkeypatch.setattr(nb, "set_num_threads", counted)
    before = nb.get_num_threads()
    with rt.Runtime(rt.Machine(cpus=2 * nb.config.NUMBA_NUM_THREADS, utils=0), executor="threaded") as rtm:
        per_worker = min(rtm.policy.threads_per_worker, nb.config.NUMBA_NUM_THREADS)
        seen = [rtm.launch(settings).get() for _ in range(50)]
        on_host = [s for s in seen if s[0] == host]
        assert on_host, "no point ran on the waiting thread"
        assert all(s[2] == per_worker for s in on_host)
        assert [n for name, n in calls if name == host] == ([per_worker] if before != per_worker else [])
    assert nb.get_num_threads() == before  # given back when the runtime shuts down


_USER_COUNT = """
import numba as nb
import runtime as rt
from tests.runtime.test_runtime_help import settings

before = nb.get_num_threads()
with rt.Runtime(rt.Machine(cpus=2 * nb.config.NUMBA_NUM_THREADS, utils=0), executor="threaded") as rtm:
    limit = min(rtm.policy.threads_per_worker, nb.config.NUMBA_NUM_THREADS)
    for _ in range(50):
        rtm.launch(settings).get()
    mine = next(n for n in range(1, before + 1) if n not in (before, limit))
    nb.set_num_threads(mine)  # the host thread's own code sets its count while the runtime lives
print(before, limit, mine, nb.get_num_threads())
"""


def test_a_count_the_thread_set_itself_survives_the_shutdown():
    # the shutdown gives the thread back its count from before its first help only if that help's limit is
    # still in effect: a count the thread's own code set since is the user's (it was overwritten)
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, NUMBA_NUM_THREADS="4", PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", _USER_COUNT], capture_output=True, text=True, env=env,
                         cwd=root, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    before, limit, mine, after = map(int, out.stdout.split()[-4:])
    assert limit != before, "no limit was set on the helping thread"
    assert after == mine
