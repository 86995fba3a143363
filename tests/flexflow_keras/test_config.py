"""Command line and configuration: parsing, precedence, validation, leaving unknown args alone."""

import sys

import pytest

from flexflow_keras import config
from flexflow_keras.errors import ConfigError


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    config.reset()
    monkeypatch.setattr(sys, "argv", ["train.py"])
    yield
    config.reset()


def test_defaults():
    cfg = config.get()
    assert (cfg.epochs, cfg.batch_size, cfg.print_freq, cfg.dataset, cfg.gpus, cfg.cpus) == (1, 64, 10, None, 0, 4)


def test_seed_command_line(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["train.py", "-e", "10", "-b", "128", "-p", "20", "-ll:gpu", "2",
                                      "-ll:fsize", "16000", "-ll:zsize", "8192", "-ll:cpu", "8",
                                      "-d", "/data/x.npz", "--mine", "3"])
    cfg = config.get()
    assert (cfg.epochs, cfg.batch_size, cfg.print_freq, cfg.gpus, cfg.fsize, cfg.zsize, cfg.cpus) == (
        10, 128, 20, 2, 16000, 8192, 8)
    assert cfg.dataset == "/data/x.npz"
    assert config.remaining_argv() == ["train.py", "--mine", "3"]
    assert {"epochs", "batch_size", "gpus"} <= cfg.from_cli


def test_long_forms_and_equals():
    settings, rest = config.parse_args(["--epochs=3", "--batch-size", "32", "--print-freq=5", "x"])
    assert settings == {"epochs": 3, "batch_size": 32, "print_freq": 5}
    assert rest == ["x"]


def test_profile_flag_with_and_without_count():
    assert config.parse_args(["-lg:prof", "1"])[0] == {"profile": True}
    assert config.parse_args(["-lg:prof"])[0] == {"profile": True}
    assert config.parse_args(["-lg:prof", "0"])[0] == {"profile": False}


@pytest.mark.parametrize("argv, needle", [
    (["-e"], "-e needs a value"),
    (["-b", "many"], "-b expects an int"),
    (["-b", "0"], "-b/--batch-size must be a positive integer"),
    (["-ll:gpu", "-1"], "-ll:gpu must be zero or more"),
])
def test_bad_flags_are_clear(argv, needle):
    with pytest.raises(ConfigError, match=needle):
        config.parse_args(argv)


def test_precedence_code_then_cli(monkeypatch):
    monkeypatch.setenv("FF_EPOCHS", "4")
    assert config.get().epochs == 4
    config.set(epochs=5, batch_size=16)
    assert config.get().epochs == 5
    monkeypatch.setattr(sys, "argv", ["train.py", "-e", "7"])
    cfg = config.get()
    assert cfg.epochs == 7 and cfg.batch_size == 16


def test_set_rejects_unknown_names():
    with pytest.raises(ConfigError, match="unknown settings"):
        config.set(epoch=3)


def test_resolve_logs_override(monkeypatch, caplog):
    monkeypatch.setattr(sys, "argv", ["train.py", "-b", "128"])
    with caplog.at_level("INFO", logger="flexflow_keras"):
        assert config.resolve("batch_size", 32, "-b/--batch-size") == 128
    assert "-b/--batch-size 128 on the command line overrides the script's batch_size=32" in caplog.text
    assert config.resolve("epochs", 3, "-e/--epochs") == 3  # not on the command line: the script wins
    assert config.resolve("epochs", None, "-e/--epochs") == 1


def test_legion_args():
    config.set(cpus=2, gpus=1, fsize=1000)
    assert config.get().legion_args()[:4] == ["-ll:cpu", "2", "-ll:gpu", "1"]
    assert "-ll:fsize" in config.get().legion_args()


@pytest.mark.parametrize("argv0", ["/usr/bin/pytest", "/x/site-packages/pytest/__main__.py",
                                   "/x/ipykernel_launcher.py"])
def test_host_programs_argv_is_not_ours(monkeypatch, argv0):
    monkeypatch.setattr(sys, "argv", [argv0, "-p", "no:cacheprovider", "-f", "kernel.json"])
    assert config.get().print_freq == 10


def test_environment_and_code_values_that_are_not_numbers(monkeypatch):
    monkeypatch.setenv("FF_SEARCH_BUDGET", "abc")
    with pytest.raises(ConfigError, match=r"FF_SEARCH_BUDGET=abc: expected an int \(as for --search-budget\), received 'abc'"):
        config.get()
    monkeypatch.delenv("FF_SEARCH_BUDGET")
    with pytest.raises(ConfigError, match=r"--search-alpha \(search_alpha=\) expects a float value"):
        config.set(search_alpha="x")
    config.set(search_alpha="0.5", epochs="3")
    assert (config.get().search_alpha, config.get().epochs) == (0.5, 3)


@pytest.mark.parametrize("args, words", [
    (["--data-parallel-degree", "0"], "--data-parallel-degree must be a positive integer"),
    (["--export-strategy", "s.svg"], "give a .json path"),
    (["--export-strategy", "/no/such/folder/strategy"], "folder that does not exist"),  # not .json (ipykernel: a notebook)
])
def test_strategy_flags_are_checked_when_read(monkeypatch, args, words):
    monkeypatch.setattr(sys, "argv", ["train.py", *args])
    with pytest.raises(ConfigError, match=words):
        config.get()


def test_debug_is_ours_not_the_scripts(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["train.py", "--debug", "--mine"])
    assert config.get().debug and config.remaining_argv() == ["train.py", "--mine"]


def test_given_means_command_line_or_code(monkeypatch):
    monkeypatch.setenv("FF_SEARCH_BUDGET", "7")
    assert config.get().search_budget == 7 and not config.get().given("search_budget")
    config.set(search_budget=9)
    assert config.get().given("search_budget")


# --- ranges, mistyped flags and environment checks (issue 10) ----------------------------------------------

@pytest.mark.parametrize("argv, needle", [
    (["-e", "0"], "-e/--epochs must be a positive integer (1 or more), received 0"),
    (["-ll:zsize", "0"], "-ll:zsize must be a positive number of MB (1 or more), received 0"),
    (["-ll:fsize", "0"], "-ll:fsize must be a positive number of MB"),
    (["-ll:csize", "0"], "-ll:csize must be a positive number of MB"),
    (["-ll:cpu", "0"], "-ll:cpu must be a positive integer"),
    (["-p", "-1"], "-p/--print-freq must be 0 or more"),
    (["--search-alpha", "0"], "--search-alpha must be a positive finite number"),
    (["--alpha", "nan"], "--alpha must be a positive finite number"),
    (["--epochs=0"], "--epochs must be a positive integer"),
    (["--seed", "-1"], "--seed must be an integer from 0 to 2**32 - 1"),
    (["--search-num-workers", "0"], "--search-num-workers must be a positive integer"),
])
def test_values_out_of_range_name_the_flag_and_the_range(argv, needle):
    with pytest.raises(ConfigError) as err:
        config.parse_args(argv)
    assert needle in str(err.value)


@pytest.mark.parametrize("argv, field, value", [
    (["-p", "0"], "print_freq", 0),  # 0: no progress lines, only the summary (the logger's meaning)
    (["-ll:util", "0"], "utils", 0),
    (["-ll:gpu", "0"], "gpus", 0),
    (["-lg:prof_logfile", "p.json"], "profile_path", "p.json"),  # Legion's spelling of --profile-path
])
def test_edge_values_that_are_accepted(argv, field, value):
    assert config.parse_args(argv)[0] == {field: value}


@pytest.mark.parametrize("argv, needle", [
    (["-ll:gpus", "2"], "Unknown flag -ll:gpus: did you mean -ll:gpu?"),
    (["-ll:zsise=8"], "did you mean -ll:zsize?"),
    (["-lg:spy"], "the runtime's flags are -lg:prof"),
])
def test_unknown_runtime_flags_are_errors_with_the_closest_match(argv, needle):
    with pytest.raises(ConfigError) as err:
        config.parse_args(argv)
    assert needle in str(err.value)


def test_a_number_glued_to_a_one_letter_flag_is_its_value_as_in_argparse():
    assert config.parse_args(["-b128", "-e3", "-p20", "x"]) == (
        {"batch_size": 128, "epochs": 3, "print_freq": 20}, ["x"])
    assert config.parse_args(["-bs", "8", "-dfoo"])[1] == ["-bs", "8", "-dfoo"]  # not numbers: the script's


def test_long_flag_near_misses_are_left_to_the_script_until_the_runtime_is_built(monkeypatch):
    # parse time: --epoch may be the script's own argparse flag, declared later; so no error yet
    assert config.parse_args(["--epoch", "3"]) == ({}, ["--epoch", "3"])
    monkeypatch.setattr(sys, "argv", ["train.py", "--epoch", "3"])
    with pytest.raises(ConfigError, match="did you mean --epochs"):
        config.check_script_args()


@pytest.mark.parametrize("var, raw, needle", [
    ("FF_EPOCHS", "abc", "FF_EPOCHS=abc: expected an int (as for -e), received 'abc'"),
    ("FF_EPOCHS", "0", "FF_EPOCHS must be a positive integer (1 or more), received 0"),
    ("FF_ZSIZE", "0", "FF_ZSIZE must be a positive number of MB"),
    ("FF_CPUS", "-2", "FF_CPUS must be a positive integer"),
    ("FF_EXECUTOR", "fast", "FF_EXECUTOR must be 'threaded' or 'sequential'"),
])
def test_environment_gets_the_flags_checks_naming_the_variable(monkeypatch, var, raw, needle):
    monkeypatch.setenv(var, raw)
    with pytest.raises(ConfigError) as err:
        config.get()
    assert needle in str(err.value)


def test_code_settings_name_the_call():
    with pytest.raises(ConfigError, match=r"config.set\(zsize=\) must be a positive number of MB"):
        config.set(zsize=0)


def test_settings_that_cannot_help_are_warned_about_once(monkeypatch, caplog):
    from flexflow_keras.utils import flag_checks

    monkeypatch.setattr(flag_checks, "_said", set())
    many = flag_checks.usable_cores() + 1
    monkeypatch.setattr(sys, "argv", ["train.py", "-ll:cpu", str(many), "-ll:fsize", "16000"])
    with caplog.at_level("WARNING", logger="flexflow_keras"):
        config.get()
        config.get()
    text = caplog.text
    assert f"-ll:cpu {many} asks for {many} CPU processors" in text and "pass -ll:cpu" in text
    assert "-ll:fsize 16000 sets the memory of each GPU, but -ll:gpu is 0: it is ignored" in text
    assert text.count("asks for") == 1  # once per process, not per config.get()
    caplog.clear()
    monkeypatch.setattr(sys, "argv", ["train.py"])
    monkeypatch.setenv("FF_CPUS", str(many))
    with caplog.at_level("WARNING", logger="flexflow_keras"):
        config.get()
    assert f"FF_CPUS={many} asks for" in caplog.text


def test_defaults_are_not_warned_about(monkeypatch, caplog):
    from flexflow_keras.utils import flag_checks

    monkeypatch.setattr(flag_checks, "_said", set())
    with caplog.at_level("WARNING", logger="flexflow_keras"):
        config.get()
    assert caplog.text == ""
