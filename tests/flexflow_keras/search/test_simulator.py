"""The simulator: determinism, delta re-simulation, what splitting and placement cost, memory per device,
and the compiled scheduler on hand-made task graphs."""

import numpy as np
import pytest
from search_cases import costs, machine, problem, wide_problem

from flexflow_keras.ops.strategy import ParallelConfig, Strategy
from flexflow_keras.search import schedule
from flexflow_keras.search.simulator import Simulator, TaskList


def make(tmp_path, name="mlp", devices=2, **kw):
    p, m = problem(name, **kw), machine(devices)
    return p, Simulator(p.graph, m, costs(m, tmp_path), p.batch, p.trainable, p.seeds)


def test_deterministic_and_delta(tmp_path):
    p, sim = make(tmp_path)
    dp = Strategy.data_parallel(p.graph, 2, 2)
    a = sim.simulate(dp)
    n_blocks = len(sim._blocks)
    assert sim.simulate(dp) == a and len(sim._blocks) == n_blocks  # nothing rebuilt
    changed = dp.as_dict()
    changed["dense"] = ParallelConfig((1, 2), (0, 1))
    b = sim.simulate(Strategy(changed))
    assert len(sim._blocks) == n_blocks + 1  # only the changed op's block is new
    assert b.step_time != a.step_time


def wide(tmp_path, batch, machine_name="dgx1_v100", devices=2):
    from flexflow_keras.search.machine import MachineModel

    p = wide_problem(batch)
    m = MachineModel.from_file(machine_name).scaled(1, devices)
    return p, Simulator(p.graph, m, costs(m, tmp_path), p.batch, p.trainable, p.seeds)


def test_more_work_takes_longer_and_two_devices_overlap(tmp_path):
    p, sim = wide(tmp_path, 4096)
    one = sim.simulate(Strategy.data_parallel(p.graph, 1, 2)).step_time
    two = sim.simulate(Strategy.data_parallel(p.graph, 2, 2)).step_time
    _, big = wide(tmp_path, 8192)
    assert big.simulate(Strategy.data_parallel(p.graph, 1, 2)).step_time > 1.5 * one
    assert two < one  # the halves run at once and outweigh the gradient exchange over NVLink


def test_slow_links_make_data_parallelism_lose(tmp_path):
    p, sim = wide(tmp_path, 1024, "pcie_2x4")
    one = sim.simulate(Strategy.data_parallel(p.graph, 1, 2)).step_time
    two = sim.simulate(Strategy.data_parallel(p.graph, 2, 2)).step_time
    assert two > one  # 8 MB of gradients each way over PCIe cost more than half the compute saves


def test_placement_costs_transfers_between_gpus(tmp_path):
    p, sim = wide(tmp_path, 1024, "pcie_2x4")
    same = {k: ParallelConfig((1,) * len(v.degrees), (0,)) for k, v in Strategy.data_parallel(p.graph, 1, 2).configs}
    apart = dict(same)
    apart["dense_1/dense"] = ParallelConfig(same["dense_1/dense"].degrees, (1,))  # an 8 MB input crosses PCIe
    t_same = sim.simulate(Strategy(same)).step_time
    t_apart = sim.simulate(Strategy(apart)).step_time
    assert t_apart > 1.2 * t_same


def test_memory_per_device(tmp_path):
    p, sim = make(tmp_path)
    dp1 = sim.simulate(Strategy.data_parallel(p.graph, 1, 2))
    assert dp1.memory[1] == 0 and dp1.memory[0] == dp1.peak > 0
    split = {k: v for k, v in Strategy.data_parallel(p.graph, 1, 2).configs}
    for name in ("dense", "dense_1"):
        split[name] = ParallelConfig((1, 2), (0, 1))
    s = sim.simulate(Strategy(split))
    assert 0 < s.memory[1] and s.peak < dp1.peak  # the weights are spread over both devices
    assert dp1.fits and s.fits


def test_scheduler_resources_latency_and_cores():
    T = TaskList(n_devices=2, handoff=0.5)
    a = T.add(1.0, [0], [])
    b = T.add(2.0, [1], [])
    T.add(1.0, [0], [a, b])  # waits for b plus the hand-off from device 1
    finish = schedule.run(T, 3, 1, 1)
    assert list(finish) == pytest.approx([1.0, 2.0, 3.5])
    T = TaskList(n_devices=3)
    for d in range(3):
        T.add(1.0, [d], [], core=0)  # three processors, one core: one at a time
    assert sorted(schedule.run(T, 3, 1, 1)) == pytest.approx([1.0, 2.0, 3.0])
    T = TaskList(gil=3, issuer=4, n_devices=2)
    x = T.add(1.0, [0], [], issue_cost=0.1, py=0.2)
    y = T.add(1.0, [1], [], issue_cost=0.1, py=0.2)
    f = schedule.run(T, 5, 2, 1)
    assert f[x] == pytest.approx(1.3) and f[y] == pytest.approx(1.6)  # the lock serialises the Python parts
    assert np.all(np.isfinite(f))


def test_roofline_calibration_is_fitted_from_measurements(tmp_path):
    from flexflow_keras.search.costs import CostModel
    from flexflow_keras.search.machine import MachineModel
    from runtime import Machine

    p = problem("mlp")
    m = MachineModel.from_runtime(Machine(cpus=2), cores=2)
    cm = CostModel(m, None, path=str(tmp_path / "c.json"), budget_s=1e9)
    sim = Simulator(p.graph, m, cm, p.batch, p.trainable, p.seeds)
    sim.simulate(Strategy.data_parallel(p.graph, 1, 2))
    assert cm.measured > 0 and cm.fallbacks == 0
    factors = cm.fit_factors()
    assert factors.get("gemm", 0) > 0  # measured Dense pieces against their roofline
    cm.budget_s = 0.0  # no more measuring: new pieces come from the calibrated roofline
    sim._blocks.clear()
    r = sim.simulate(Strategy.data_parallel(p.graph, 2, 2))
    assert cm.fallbacks > 0 and r.step_time > 0


def test_under_mpi_each_weight_gradient_is_summed_over_the_nodes_before_its_update(tmp_path):
    """A machine of replicas (MPI ranks): the step grows by the sums the backward pass cannot hide, and
    more as the measured network gets slower."""
    import dataclasses

    from flexflow_keras.search.machine import Link

    p, sim = wide(tmp_path, 256)
    dp = Strategy.data_parallel(p.graph, 2, 2)
    alone = sim.simulate(dp).step_time

    def over(bandwidth):
        m = sim.machine
        net = Link(len(m.links), "net", bandwidth, 10e-6)
        m2 = dataclasses.replace(m, links=[*m.links, net], replicas=2, replica_link=net.id)
        s = Simulator(p.graph, m2, sim.costs, p.batch, p.trainable, p.seeds)
        return s.simulate(dp).step_time, m2

    fast, _ = over(100e9)
    slow, m2 = over(1e9)
    last = max(int(np.prod(v.shape)) * 4 for v in p.graph.variables)
    assert alone < fast < slow
    assert slow - alone >= m2.allreduce_time(last)  # at least one sum is waited in full by its update
