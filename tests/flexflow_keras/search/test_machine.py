"""Machine models: the shipped files, routes and transfer times, scaling, this machine, and bad files."""

import json

import pytest

from flexflow_keras.errors import ConfigError
from flexflow_keras.search.machine import MACHINES_DIR, DeviceSpec, Link, MachineModel
from runtime import Machine

SHIPPED = ["dgx1_v100", "hgx_h200", "hgx_h200_x4_ib", "pcie_2x4"]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_files_load_and_every_pair_has_a_route(name):
    m = MachineModel.from_file(name)
    assert m.kind == "GPU" and m.n >= 8 and not m.present
    for a in range(m.n):
        for b in range(m.n):
            t = m.transfer_time(a, b, 1 << 20)
            assert (t == 0) == (a == b)


def test_dgx1_nvlink_topology():
    m = MachineModel.from_file("dgx1_v100")
    mb = 1 << 26
    # a double NVLink (0-3) is twice as fast as a single one (0-1); 0-5 has no link: through the host
    assert m.transfer_time(0, 3, mb) < m.transfer_time(0, 1, mb) < m.transfer_time(0, 5, mb)
    lanes = {}
    for lk in m.links:
        if lk.name.startswith("link"):
            a, b = map(int, lk.name[4:].split("-"))
            for d in (a, b):
                lanes[d] = lanes.get(d, 0) + round(lk.bandwidth / 25e9)
    assert all(v == 6 for v in lanes.values()) and len(lanes) == 8  # six NVLinks per V100


def test_cluster_routes_cross_the_network():
    m = MachineModel.from_file("hgx_h200_x4_ib")
    assert m.nodes == 4 and m.n == 32
    mb = 1 << 26
    assert m.transfer_time(0, 1, mb) < m.transfer_time(0, 8, mb)  # NVSwitch beats InfiniBand
    pcie = MachineModel.from_file("pcie_2x4")
    assert pcie.route(0, 4) != pcie.route(0, 1) and len(pcie.route(0, 4)) == 4


def test_scaled_machine():
    m = MachineModel.from_file("dgx1_v100").scaled(2)
    assert m.n == 16 and m.nodes == 2
    assert m.transfer_time(0, 9, 1 << 20) > m.transfer_time(0, 1, 1 << 20)
    w = MachineModel.from_file("pcie_2x4").scaled(per_node=2)
    assert w.n == 4


def test_scaling_this_machines_gpus():
    """A model of this process's GPUs (no link table) scales too (-ll:gpu 2 --search-num-nodes 2)."""
    devices = [DeviceSpec(i, 0, "GPU", "GPU", 14e12, 9e11, 16 << 30, i) for i in range(2)]
    links = [Link(i, f"pcie{i}", 12e9, 1e-5) for i in range(2)]
    m = MachineModel("this machine", "GPU", devices, 1, 8, links, {(0, 1): (0, 1), (1, 0): (1, 0)}, True,
                     "runtime", {0: (0,), 1: (1,)})
    big = m.scaled(2)
    assert big.n == 4 and big.nodes == 2 and not big.present
    assert big.transfer_time(0, 3, 1 << 20) > big.transfer_time(0, 1, 1 << 20)


def test_the_cache_signature_sees_the_wiring():
    a = MachineModel.from_file("dgx1_v100")
    doc = json.load(open(f"{MACHINES_DIR}/dgx1_v100.json"))
    doc["intra_node"] = doc["intra_node"][:2]
    b = MachineModel.from_dict(doc)
    assert a.signature() != b.signature()


def test_this_machine():
    m = MachineModel.from_runtime(Machine(cpus=3), cores=2)
    assert m.kind == "CPU" and m.n == 3 and m.present and m.cores == 2
    assert m.transfer_time(0, 0, 1 << 20) == 0 and {d.memory for d in m.devices} == {0}


def test_the_cost_model_measures_with_the_threads_the_engine_runs(tmp_path):
    # the engine gives each busy processor the free cores' share of BLAS threads (Engine._apply_thread_policy);
    # measured with the whole machine's cores instead, a loaded machine's pieces waited on a thread another
    # process held (MNIST MLP b128, one processor: predicted 164 ms a step, measured 10.1)
    from flexflow_keras.search.costs import CostModel

    m = MachineModel.from_runtime(Machine(cpus=4), cores=4)
    cm = CostModel(m, None, measure=False, path=str(tmp_path / "c.json"))
    assert [cm.threads_for(d) for d in (1, 2, 4)] == [4, 2, 1]
    m.free_cores = 1
    assert [cm.threads_for(d) for d in (1, 2, 4)] == [1, 1, 1]
    m.free_cores = 2
    assert [cm.threads_for(d) for d in (1, 2, 4)] == [2, 1, 1]


def test_the_search_plans_with_the_free_cores(monkeypatch):
    from flexflow_keras import config
    from flexflow_keras.execution import choice

    class Engine:
        class rtm:
            machine = Machine(cpus=2)

            class policy:
                free = 1

    config.reset()
    monkeypatch.setattr(choice, "host_cores", lambda: 2)
    m = choice.machine_model(Engine)
    assert m.cores == 2 and m.free_cores == 1


def test_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="no such file.*dgx1_v100"):
        MachineModel.from_file(str(tmp_path / "none.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    with pytest.raises(ConfigError, match="not valid JSON"):
        MachineModel.from_file(str(bad))
    doc = json.load(open(f"{MACHINES_DIR}/pcie_2x4.json"))
    del doc["device"]["flops"]
    bad.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="flops"):
        MachineModel.from_file(str(bad))
    doc = json.load(open(f"{MACHINES_DIR}/dgx1_v100.json"))
    doc["intra_node"][0]["devices"] = [0, 9]
    bad.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="outside 0..7"):
        MachineModel.from_file(str(bad))
    for field, value, words in [("inter_node", {"latency": 1e-6}, "inter_node.bandwidth"),
                                ("intra_node_default", {"bandwidth": -1, "latency": 0}, "positive bandwidth")]:
        doc = json.load(open(f"{MACHINES_DIR}/pcie_2x4.json"))
        doc[field] = value
        bad.write_text(json.dumps(doc))
        with pytest.raises(ConfigError, match=words):
            MachineModel.from_file(str(bad))
    doc = json.load(open(f"{MACHINES_DIR}/pcie_2x4.json"))
    doc["device"]["capacity_gb"] = 0
    bad.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="capacity_gb must be"):
        MachineModel.from_file(str(bad))


class _World:
    """What MachineModel.from_runtime reads of runtime.comm's World: the rank count and rank 0's
    measured links."""

    def __init__(self, size, links):
        self.size, self.links = size, links


def test_under_mpi_this_machine_is_its_node_times_the_ranks_over_the_measured_link():
    from runtime.comm import Link as Measured

    world = _World(3, [Measured(1, 6e9, 8e-6), Measured(2, 4e9, 12e-6)])
    m = MachineModel.from_runtime(Machine(cpus=2), cores=1, world=world)
    assert m.present and m.n == 2 and m.replicas == 3
    net = m.links[m.replica_link]
    assert (net.bandwidth, net.latency) == (4e9, 12e-6)  # the slowest link sets a collective's pace
    # a ring: 2(N-1) steps, each a latency and a third of the bytes
    assert m.allreduce_time(3e6) == pytest.approx(4 * (12e-6 + 1e6 / 4e9))
    assert "x 3 nodes (MPI ranks)" in m.describe() and "4.00 GB/s" in m.describe()
    assert m.summary()["nodes"] == 3
    one = MachineModel.from_runtime(Machine(cpus=2), cores=1)
    assert one.replicas == 1 and one.allreduce_time(3e6) == 0.0 and one.signature() != m.signature()
    assert MachineModel.from_runtime(Machine(cpus=2), cores=1, world=_World(1, [])).replicas == 1
    # the link is measured at every start-up: its figures must not make every run's cache key new
    again = MachineModel.from_runtime(Machine(cpus=2), cores=1, world=_World(3, [Measured(1, 5.1e9, 9e-6),
                                                                                Measured(2, 4.2e9, 11e-6)]))
    assert again.signature() == m.signature()
    big = m.scaled(per_node=4)  # --search-num-workers under MPI: the ranks' nodes, their measured network
    assert big.nodes == 3 and big.n == 12 and not big.present
    assert {(lk.bandwidth, lk.latency) for lk in big.links} == {(4e9, 12e-6)}
