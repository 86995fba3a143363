"""The CUDA simulator's notice: its wording and figures, and silence on a machine without GPUs."""

import logging

from flexflow_keras.execution import simulator_notice
from runtime import Machine


def test_notice_names_the_simulator_and_rounds_the_estimate():
    text = simulator_notice.text(371.59)
    assert text.startswith("GPU: CUDA simulator (NUMBA_ENABLE_CUDASIM=1): kernels run in Python")
    assert "(372 µs each here)" in text and "about 370,000× slower than a GPU" in text


def test_no_notice_without_gpu_processors(monkeypatch, caplog):
    monkeypatch.setattr(simulator_notice, "_said", [False])
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        simulator_notice.announce(Machine(cpus=1))
    assert "simulator" not in caplog.text and simulator_notice._said == [False]


def test_step_estimate_is_a_lower_bound_from_the_weights(monkeypatch):
    monkeypatch.setattr(simulator_notice, "_us", [None])
    assert simulator_notice.step_estimate(669_706) is None  # the simulator was not announced
    monkeypatch.setattr(simulator_notice, "_us", [100.0])
    line = simulator_notice.step_estimate(669_706)
    assert line == ("CUDA simulator: 669,706 trainable weights, so a training step runs at least 1,339,412 "
                    "simulated CUDA threads: at least 2 min per step here")
