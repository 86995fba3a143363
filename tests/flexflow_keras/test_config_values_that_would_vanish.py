"""Settings that used to be accepted and then silently changed or dropped: an empty path on the command line
(`-d ""` trained on synthetic data), config.set values that int() or truthiness changed (epochs=2.5 trained
2 epochs, only_data_parallel="no" turned it on), --profile-path without -lg:prof, and a profile path that
is a folder (a traceback at exit, exit status 0)."""

import logging
import sys

import pytest

from flexflow_keras import config
from flexflow_keras.errors import ConfigError
from flexflow_keras.execution import context


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    config.reset()
    monkeypatch.setattr(sys, "argv", ["train.py"])
    yield
    config.reset()


@pytest.mark.parametrize("argv", [["-d", ""], ["--dataset="], ["--import-strategy="], ["--export-strategy", ""],
                                  ["--machine-model-file="], ["-lg:prof", "--profile-path="]])
def test_an_empty_path_on_the_command_line_is_an_error(argv):
    with pytest.raises(ConfigError, match="received an empty string. Example: "):
        config.parse_args(argv)


def test_a_missing_path_value_shows_a_path_as_the_example():
    with pytest.raises(ConfigError, match=r"Example: -d ~/data/mnist.npz$"):
        config.parse_args(["-d"])
    with pytest.raises(ConfigError, match=r"Example: -lg:prof_logfile profile.json$"):
        config.parse_args(["-lg:prof_logfile"])


@pytest.mark.parametrize("settings, words", [
    ({"epochs": 2.5}, r"config.set\(epochs=\) expects an integer, received float 2.5"),
    ({"batch_size": True}, r"config.set\(batch_size=\) expects an integer, received bool True"),
    ({"only_data_parallel": "no"}, r"config.set\(only_data_parallel=\) expects True or False, received str 'no'"),
    ({"profile": 1}, r"config.set\(profile=\) expects True or False"),
    ({"dataset": ""}, r"config.set\(dataset=\) expects a path \(a non-empty string\), received an empty string"),
    ({"dataset": 3}, r"config.set\(dataset=\) expects a path \(a non-empty string\), received int 3"),
])
def test_code_values_that_would_change_silently_are_errors(settings, words):
    with pytest.raises(ConfigError, match=words):
        config.set(**settings)
    assert not config.get().from_code


def test_code_values_that_mean_what_they_say_are_kept(tmp_path):
    config.set(epochs=2.0, batch_size="16", only_data_parallel=False, dataset=tmp_path / "d.npz", seed=None)
    cfg = config.get()
    assert (cfg.epochs, cfg.batch_size, cfg.only_data_parallel, cfg.dataset) == (2, 16, False, str(tmp_path / "d.npz"))


def test_a_profile_path_that_is_a_folder_or_under_a_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="--profile-path .*: the path is a folder"):
        config.parse_args(["-lg:prof", "--profile-path", str(tmp_path)])
    (tmp_path / "f.json").write_text("{}")
    with pytest.raises(ConfigError, match="which is not a folder"):
        config.parse_args(["-lg:prof", "-lg:prof_logfile", str(tmp_path / "f.json" / "p.json")])
    with pytest.raises(ConfigError, match=r"config.set\(profile_path=\) .*is a folder.*"
                                          r"config.set\(profile_path='profile.json'\)"):
        config.set(profile=True, profile_path=str(tmp_path))
    settings, _ = config.parse_args(["-lg:prof", "--profile-path", str(tmp_path / "new" / "p.json")])
    assert settings["profile_path"] == str(tmp_path / "new" / "p.json")  # the profiler makes the folder


def test_profile_path_without_profiling_is_an_error_before_work(monkeypatch, tmp_path):
    out = str(tmp_path / "p.json")
    monkeypatch.setattr(sys, "argv", ["train.py", "--profile-path", out])
    with pytest.raises(ConfigError, match=r"--profile-path .*p.json says where -lg:prof writes .* Add -lg:prof"):
        context.check_before_work()
    monkeypatch.setattr(sys, "argv", ["train.py"])
    config.set(profile_path=out)
    with pytest.raises(ConfigError, match=r"Add config.set\(profile=True\)"):
        config.check_no_effect(config.get())
    config.set(profile=True)
    config.check_no_effect(config.get())


def test_a_profile_the_disk_refuses_at_exit_is_one_logged_error(monkeypatch, caplog):
    class Refusing:
        def write_profile(self, path):
            raise PermissionError(13, "Permission denied", path)

        def shutdown(self):
            pass

    config.set(profile=True)
    monkeypatch.setattr(context, "_current", (("k",), Refusing()))
    with caplog.at_level(logging.ERROR, logger="flexflow_keras"):
        context.shutdown_runtime()
    assert "-lg:prof could not write the profile to flexflow_profile.json (Permission denied)" in caplog.text


def test_a_code_setting_the_call_overrides_is_logged(caplog):
    config.set(epochs=5)
    with caplog.at_level("INFO", logger="flexflow_keras"):
        assert config.resolve("epochs", 2, "-e/--epochs") == 2
        assert config.resolve("epochs", None, "-e/--epochs") == 5
        assert config.resolve("batch_size", 32, "-b/--batch-size") == 32  # not set from code: nothing to say
    assert caplog.text.count("the call's epochs=2 is used, not config.set(epochs=5)") == 1
    assert "batch_size" not in caplog.text
