"""Strategy flags that were accepted without effect, and advice that led into an error: --only-data-parallel
beside --data-parallel-degree N (the degree is fixed, nothing is compared), a --search-only search for
another machine whose result came from the cache (nothing printed the strategy), and a skipped
--only-data-parallel search advising --search-budget N (an error beside --only-data-parallel)."""

import sys

import pytest
from strategy_cases import compile_model, data, mlp

from flexflow_keras import config
from flexflow_keras.errors import ConfigError


def fit_mlp(cpus=2, batch=8, n=24):
    config.set(cpus=cpus)
    model = mlp()
    compile_model(model)
    x, y = data("mlp", n=n)
    model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    return model


def test_only_data_parallel_beside_a_fixed_degree_is_an_error(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["train.py", "--only-data-parallel", "--data-parallel-degree", "2"])
    with pytest.raises(ConfigError, match=r"--data-parallel-degree 2 fixes the degree, so --only-data-parallel "
                                          r"would have no effect; give one of them"):
        fit_mlp()


def test_a_cached_search_for_another_machine_still_prints_its_strategy(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("FF_CACHE_DIR", str(tmp_path))
    for _ in range(2):
        config.reset()
        config.set(search_num_nodes=2, search_only=True, search_budget=5)
        caplog.clear()
        with caplog.at_level("INFO", logger="flexflow_keras"):
            fit_mlp()
    assert "reusing the result cached" in caplog.text
    assert "strategy for this machine scaled to 2 node(s)" in caplog.text
    assert "\n  dense  " in caplog.text  # the configs, one op a line


def test_a_skipped_data_parallel_search_advises_a_flag_it_accepts(caplog, tmp_path, monkeypatch):
    monkeypatch.setenv("FF_CACHE_DIR", str(tmp_path))
    config.set(only_data_parallel=True)
    with caplog.at_level("INFO", logger="flexflow_keras"):
        fit_mlp(n=16)
    assert "data-parallel degree search skipped" in caplog.text
    assert "--search-budget N searches now" not in caplog.text
    assert "--export-strategy FILE measures the degrees now" in caplog.text


def test_strategy_flags_on_a_train_step_that_runs_as_written_are_an_error(monkeypatch):
    import numpy as np

    import flexflow_keras as keras
    from flexflow_keras.ops.tape import GradientTape

    class Own(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = keras.layers.Dense(2)

        def call(self, x):
            return self.d(x)

        def train_step(self, data):
            x, y = data
            with GradientTape() as tape:
                loss = keras.ops.mean((self(x) - y) ** 2)
            grads = tape.gradient(loss, self.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.trainable_weights, strict=True))
            return {"loss": loss}

    monkeypatch.setattr(sys, "argv", ["train.py", "--search-only"])
    model = Own()
    model.compile(optimizer="sgd")
    with pytest.raises(ConfigError, match=r"--search-only would have no effect: model '.*' trains one batch at a "
                                          r"time .* as its train_step is written \(does not call"):
        model.fit(np.zeros((8, 4), "float32"), np.zeros((8, 2), "float32"), epochs=1, verbose=0)
