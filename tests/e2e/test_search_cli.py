"""The search from the command line: it runs by default and explains its choice, --search-only exports
and stops, a described or scaled machine can only be exported, and a second run reuses the result."""

import json
import os
import subprocess
import sys

import pytest

SCRIPT = """
import numpy as np
import flexflow_keras as keras
rng = np.random.default_rng(0)
x = rng.standard_normal((256, 32)).astype("float32")
y = rng.integers(0, 4, 256)
m = keras.Sequential([keras.Input((32,)), keras.layers.Dense(64, activation="relu", name="fc1"),
                      keras.layers.Dense(4, activation="softmax", name="fc2")])
m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
m.fit(x, y, batch_size=64, epochs=1, verbose=0)
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def run(script, *args, cache):
    env = dict(os.environ, FF_CACHE_DIR=str(cache), FF_LOG_LEVEL="INFO")
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=300,
                          cwd=script.parent, env=env)


def test_search_runs_by_default_and_a_second_run_reuses_it(script, tmp_path):
    cache = tmp_path / "cache"
    first = run(script, "-ll:cpu", "2", "-e", "200", cache=cache)  # 800 steps: a light check fits
    assert first.returncode == 0, first.stderr[-2000:]
    assert "strategy search compared" in first.stderr and "winner:" in first.stderr
    assert "data parallel x1" in first.stderr and "data parallel x2" in first.stderr
    assert "light measurements for a fit of 800 steps" in first.stderr
    assert "fit:" in first.stderr
    second = run(script, "-ll:cpu", "2", "-e", "200", cache=cache)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "reusing the result cached" in second.stderr, second.stderr[:3000]
    chosen = [ln for ln in first.stderr.splitlines() if ln.startswith("[flexflow_keras] strategy: ")]
    again = [ln for ln in second.stderr.splitlines() if ln.startswith("[flexflow_keras] strategy: ")]
    assert chosen and again


def test_a_short_fit_skips_the_search_and_a_search_flag_forces_it(script, tmp_path):
    short = run(script, "-ll:cpu", "2", cache=tmp_path / "c")  # 4 steps: measuring would cost more
    assert short.returncode == 0, short.stderr[-2000:]
    assert "strategy search skipped: measuring strategies would cost more than 10% of this fit's 4 steps" in short.stderr
    assert "strategy search compared" not in short.stderr and "fit:" in short.stderr
    forced = run(script, "-ll:cpu", "2", "--search-budget", "200", cache=tmp_path / "c")
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert "strategy search compared" in forced.stderr and "light measurements" not in forced.stderr


def test_search_only_exports_and_does_not_train(script, tmp_path):
    out = tmp_path / "s.json"
    r = run(script, "-ll:cpu", "2", "--search-only", "--export-strategy", str(out), cache=tmp_path / "c")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "not training" in r.stderr and "fit:" not in r.stderr
    doc = json.loads(out.read_text())
    assert set(doc["ops"]) >= {"fc1", "fc2/dense", "loss"}
    svg = out.with_suffix(".svg").read_text()
    assert svg.startswith("<?xml") or svg.startswith("<svg")


@pytest.mark.parametrize("flags, gpus, nodes", [(["--machine-model-file", "dgx1_v100"], 8, 1),
                                                (["--machine-model-file", "pcie_2x4"], 4, 2),
                                                (["--search-num-workers", "8"], 0, 1)])
def test_search_for_another_machine(script, tmp_path, flags, gpus, nodes):
    out = tmp_path / "big.json"
    r = run(script, *flags, "--search-only", "--export-strategy", str(out), "-ll:cpu", "2",
            cache=tmp_path / "c")
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["machine"]["gpus"] == gpus and doc["machine"]["nodes"] == nodes
    if not gpus:
        assert doc["machine"]["cpus"] == 8
    devices = {d for op in doc["ops"].values() for d in op["devices"]}
    assert max(devices) < (gpus * nodes or 8)
