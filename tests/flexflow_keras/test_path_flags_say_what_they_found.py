"""Path flags name what the path is when it is unusable (a FIFO 'does not exist', a folder 'no such file', a
file standing where a folder should be 'does not exist' said otherwise), and an image folder's log line
reads '-d PATH: image folder ...' (it read 'dataset: dataset PATH')."""

import os
import sys

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config
from flexflow_keras.errors import ConfigError
from flexflow_keras.search.machine import MachineModel


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    config.reset()
    monkeypatch.setattr(sys, "argv", ["train.py"])
    yield
    config.reset()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_an_imported_strategy_that_is_a_fifo_is_not_called_missing(tmp_path):
    os.mkfifo(tmp_path / "s.json")
    with pytest.raises(ConfigError, match="exists but is not a regular file"):
        config.parse_args(["--import-strategy", str(tmp_path / "s.json")])


def test_an_export_path_under_a_file_says_so(tmp_path):
    (tmp_path / "f.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"f.json/x.json: the path is under .*f.json, which is not a folder"):
        config.parse_args(["--export-strategy", str(tmp_path / "f.json" / "x.json")])


def test_a_machine_model_that_is_a_folder_says_so(tmp_path):
    with pytest.raises(ConfigError, match=r"--machine-model-file .*: is a folder\. Give a machine-model JSON"):
        MachineModel.from_file(str(tmp_path))


def test_an_image_folder_is_logged_as_the_dataset_flag(tmp_path, caplog):
    from PIL import Image

    for c in ("a", "b"):
        (tmp_path / c).mkdir()
        for i in range(2):
            Image.fromarray(np.full((8, 8, 3), 40 * i, np.uint8)).save(tmp_path / c / f"{i}.png")
    config.set(dataset=str(tmp_path), cpus=1)
    model = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    with caplog.at_level("INFO", logger="flexflow_keras"):
        model.fit(epochs=1, batch_size=2, verbose=0)
    assert f"data: -d {tmp_path}: image folder" in caplog.text
    assert "dataset: dataset" not in caplog.text
