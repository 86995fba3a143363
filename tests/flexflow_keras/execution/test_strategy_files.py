"""Strategy files and the strategy flags: export -> import round trip, every kind of misfit with its
message, a hand-written file that splits every Dense along its output features trains like data
parallelism, tail batches under a strategy, and the command line's clean errors."""

import json
import subprocess
import sys

import numpy as np
import pytest
from strategy_cases import compile_model, data, graph_of, mlp

from flexflow_keras import config
from flexflow_keras.errors import ConfigError, StrategyError
from flexflow_keras.ops.strategy import ParallelConfig, Strategy, read_strategy_file, write_strategy_file


def fit_mlp(cpus=2, batch=8, n=24, epochs=1, **compile_kw):
    config.set(cpus=cpus)
    model = mlp()
    compile_model(model, **compile_kw)
    x, y = data("mlp", n=n)
    hist = model.fit(x, y, batch_size=batch, epochs=epochs, shuffle=False, verbose=0)
    return model, hist


def test_export_then_import_round_trip(tmp_path):
    path = str(tmp_path / "s.json")
    config.set(export_strategy=path, data_parallel_degree=2)
    model, _ = fit_mlp()
    doc = json.load(open(path))
    assert doc["format"] == "flexflow_keras.strategy/1"
    assert doc["machine"] == {"gpus": 0, "cpus": 2, "nodes": 1}
    assert doc["ops"]["dense"] == {"degrees": [2, 1], "devices": [0, 1]}
    written = model._engine.strategy
    config.reset()
    config.set(import_strategy=path)
    model2, _ = fit_mlp()
    assert model2._engine.strategy == written
    assert model2._engine.strategy.source == f"file {path}"


def test_api_round_trip(tmp_path):
    s = Strategy({"dense": ParallelConfig((1, 2), (1, 0)),
                  "dense_1": ParallelConfig((2, 1), (0, 1, 1, 0), reduce=2)})
    path = str(tmp_path / "x.json")
    write_strategy_file(path, s, {"gpus": 0, "cpus": 2, "nodes": 1})
    back, machine = read_strategy_file(path)
    assert back == s and machine["cpus"] == 2
    assert "x2 partial sums" in str(back.get("dense_1"))


def write(tmp_path, ops, fmt="flexflow_keras.strategy/1"):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"format": fmt, "machine": {"gpus": 0, "cpus": 2, "nodes": 1}, "ops": ops}))
    return str(path)


@pytest.mark.parametrize("ops, words", [
    ({"nope": {"degrees": [1, 1], "devices": [0]}}, ["nope", "does not have", "dense_1"]),
    ({"dense": {"degrees": [2], "devices": [0, 1]}}, ["'dense'", "1 degrees", "2 dims"]),
    ({"dense_2/softmax": {"degrees": [1, 2], "devices": [0, 1]}}, ["dense_2/softmax", "dim 1", "degree 2",
                                                                   "softmax normalises"]),
    ({"dense": {"degrees": [1, 99], "devices": list(range(99))}}, ["'dense'", "degree 99", "1 to 16"]),
    ({"dense": {"degrees": [2, 1], "devices": [0, 5]}}, ["'dense'", "[5]", "2 CPU", "-ll:cpu 6"]),
    ({"activation": {"degrees": [1, 1], "reduce": 2, "devices": [0, 1]}}, ["'activation'", "reduce=2",
                                                                          "1 only"]),
    ({"dense": {"degrees": [1, 1], "reduce": 2, "devices": [0, 1]}}, ["'dense'", "fused activation 'relu'"]),
    ({"dense": {"degrees": [2, 1], "devices": [0]}}, ["'dense'", "2 pieces", "give 2 devices"]),
    ({"dense": {"degrees": [1, 1]}}, ["'dense'", "\"degrees\" and \"devices\""]),
    ({"dense": {"degrees": [1, 1], "devices": [0], "split": 2}}, ["'dense'", "unknown keys ['split']"]),
])
def test_each_misfit_has_its_message(tmp_path, ops, words):
    config.set(import_strategy=write(tmp_path, ops))
    with pytest.raises(StrategyError) as e:
        fit_mlp()
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_bad_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(StrategyError, match="not valid JSON"):
        read_strategy_file(str(bad))
    with pytest.raises(StrategyError, match="format"):
        read_strategy_file(write(tmp_path, {}, fmt="something/2"))
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(StrategyError):
        read_strategy_file(str(binary))
    with pytest.raises(ConfigError, match="does not exist"):
        config.set(import_strategy=str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="is a folder"):
        config.set(import_strategy=str(tmp_path))


def test_missing_ops_are_data_parallel_and_logged(tmp_path, caplog):
    config.set(import_strategy=write(tmp_path, {"dense_1": {"degrees": [1, 2], "devices": [0, 1]}}),
               data_parallel_degree=2)
    with caplog.at_level("INFO", logger="flexflow_keras"):
        model, _ = fit_mlp()
    s = model._engine.strategy
    assert s.get("dense_1") == ParallelConfig((1, 2), (0, 1))
    assert s.get("dense") == ParallelConfig((2, 1), (0, 1))
    assert "which run data parallel (degree 2): dense, activation" in caplog.text
    assert f"strategy: file {config.get().import_strategy}" in caplog.text


def test_every_dense_split_by_output_features_matches_data_parallel(tmp_path):
    ops = {name: {"degrees": [1, 2], "devices": [0, 1]} for name in ("dense", "dense_1", "dense_2/dense")}
    config.set(import_strategy=write(tmp_path, ops))
    model, hist = fit_mlp(epochs=2)
    config.reset()
    config.set(data_parallel_degree=2)
    ref, ref_hist = fit_mlp(epochs=2)
    np.testing.assert_allclose(hist.history["loss"], ref_hist.history["loss"], rtol=1e-5)
    for a, b in zip(model.get_weights(), ref.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)


def test_tail_batch_runs_under_the_same_strategy():
    # 20 samples in batches of 8: the last batch has 4 samples, fewer than the sample degree 6
    s = Strategy({"dense": ParallelConfig((6, 1), (0, 1, 0, 1, 0, 1)), "dense_1": ParallelConfig((3, 2), (0,) * 6)})
    model, hist = fit_mlp(n=20, strategy=s, epochs=2)
    assert model._engine.strategy.get("dense") == s.get("dense")
    ref, ref_hist = fit_mlp(n=20, epochs=2)
    np.testing.assert_allclose(hist.history["loss"], ref_hist.history["loss"], rtol=1e-5)
    for a, b in zip(model.get_weights(), ref.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)


def test_only_data_parallel_beats_a_code_strategy(caplog):
    s = Strategy({"dense": ParallelConfig((1, 2), (0, 1))})
    config.set(only_data_parallel=True, data_parallel_degree=2)
    with caplog.at_level("INFO", logger="flexflow_keras"):
        model, _ = fit_mlp(strategy=s)
    assert model._engine.strategy.source.startswith("data parallelism")
    assert "overrides the strategy given in code" in caplog.text


@pytest.mark.parametrize("settings, words", [
    ({"search_budget": 100}, ["--search-budget", "no search runs", "--import-strategy"]),
    ({"search_alpha": 0.1, "machine_model": "dgx1_v100"}, ["--search-alpha and --machine-model-file"]),
])
def test_search_settings_without_a_search_are_errors(tmp_path, settings, words):
    config.set(import_strategy=write(tmp_path, {"dense_1": {"degrees": [1, 2], "devices": [0, 1]}}), **settings)
    with pytest.raises(ConfigError) as e:
        fit_mlp()
    for w in words:
        assert w in str(e.value), (w, str(e.value))


@pytest.mark.parametrize("settings, cpus, words", [
    ({"search_budget": 10}, 1, ["--search-budget", "one processor"]),
    ({"search_budget": 10, "only_data_parallel": True}, 2, ["--search-budget", "--only-data-parallel compares"]),
    ({"search_alpha": 0.5, "data_parallel_degree": 2}, 2, ["--search-alpha", "--data-parallel-degree 2 fixes"]),
    ({"data_parallel_degree": 2, "search_num_nodes": 2}, 2, ["--data-parallel-degree 2 trains on this machine"]),
])
def test_settings_that_cannot_take_effect_are_errors(settings, cpus, words):
    config.set(**settings)
    with pytest.raises(ConfigError) as e:
        fit_mlp(cpus=cpus)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_a_degree_from_code_fills_a_code_strategy_and_one_from_the_command_line_overrides_it(monkeypatch, caplog):
    s = Strategy({"dense_1": ParallelConfig((1, 2), (0, 1))})
    config.set(data_parallel_degree=2)
    model, _ = fit_mlp(strategy=s)
    got = model._engine.strategy
    assert got.get("dense_1") == ParallelConfig((1, 2), (0, 1)) and got.get("dense") == ParallelConfig((2, 1), (0, 1))
    config.reset()
    monkeypatch.setattr(sys, "argv", ["train.py", "--data-parallel-degree", "2"])
    with caplog.at_level("INFO", logger="flexflow_keras"):
        model, _ = fit_mlp(strategy=s)
    assert model._engine.strategy.source.startswith("data parallelism, degree 2")
    assert "--data-parallel-degree 2 overrides the strategy given in code" in caplog.text


def test_search_settings_with_a_code_strategy_are_errors():
    config.set(search_budget=50)
    with pytest.raises(ConfigError, match="the strategy is given in code"):
        fit_mlp(strategy=Strategy({"dense": ParallelConfig((1, 2), (0, 1))}))


def test_a_strategy_file_given_in_code_is_named_as_such(tmp_path):
    with pytest.raises(StrategyError, match=r"config.set\(strategy=...\) .*no such file"):
        config.set(strategy=str(tmp_path / "none.json"))
        fit_mlp()


def test_strategy_in_code_is_checked_at_compile(tmp_path):
    model = mlp()
    with pytest.raises(StrategyError, match="expects a flexflow_keras Strategy"):
        compile_model(model, strategy={"dense": [1, 2]})
    with pytest.raises(StrategyError, match="no such file"):
        compile_model(model, strategy=str(tmp_path / "none.json"))


def test_data_parallel_is_a_strategy():
    g = graph_of("mlp")
    s = Strategy.data_parallel(g, 4, n_devices=2)
    assert s.get("dense") == ParallelConfig((4, 1), (0, 1, 0, 1))
    assert s.get("loss") == ParallelConfig((4,), (0, 1, 0, 1))
    assert s.source == "data parallelism, degree 4"


SCRIPT = """
import numpy as np
import flexflow_keras as keras
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="fc")])
m.compile(loss="mse")
m.fit(np.zeros((8, 4), "float32"), np.zeros((8, 2), "float32"), verbose=0)
"""


@pytest.mark.parametrize("args, code, words", [
    (["--import-strategy", "nope.json"], 2, ["--import-strategy nope.json", "does not exist"]),
    (["--search-budget", "-3"], 2, ["--search-budget must be 0 or more"]),
    (["--machine-model-file", "dgx1_v100"], 2, ["searched for DGX-1", "--search-only"]),
])
def test_command_line_errors_are_one_clean_message(tmp_path, args, code, words):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    r = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, cwd=tmp_path,
                       timeout=120)
    assert r.returncode == code
    assert "Traceback" not in r.stderr
    for w in words:
        assert w in r.stderr


def test_command_line_misfit_file_is_one_clean_message(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    path = write(tmp_path, {"fc": {"degrees": [1, 3], "devices": [0, 1, 2]}})
    r = subprocess.run([sys.executable, str(script), "--import-strategy", path, "-ll:cpu", "2"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "op 'fc'" in r.stderr and "degree 3" in r.stderr and "1 to 2" in r.stderr


def test_a_long_strategy_logs_the_ops_that_differ_and_counts_the_rest():
    """The strategy log of a 200-op model names the ops whose split differs from the most common one and
    counts the rest, ignoring the ops' ranks; describe() without a limit still lists every op."""
    configs = {f"conv{i}": ParallelConfig((2, 1, 1, 1), (0, 1)) for i in range(200)}
    configs.update({f"pool{i}": ParallelConfig((2, 1), (0, 1)) for i in range(30)})
    configs["dense"] = ParallelConfig((1, 2), (0, 1))
    strategy = Strategy(configs, "test")
    brief = strategy.describe(max_lines=24).splitlines()
    assert brief[0].split() == ["dense", "[1,", "2]", "on", "[0,", "1]"]
    assert brief[-1].startswith("  the other 230 ops: degrees [2, ...] on [0, 1]")
    assert len(brief) == 2
    assert len(strategy.describe().splitlines()) == 231
    many = Strategy({f"op{i}": ParallelConfig((1, 1 + i % 2), tuple(range(1 + i % 2))) for i in range(100)}, "t")
    lines = many.describe(max_lines=24).splitlines()
    assert len(lines) == 26 and lines[24] == "  ... and 26 more ops with other configs"
