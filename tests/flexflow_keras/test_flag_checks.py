"""Mistyped flags, the script's own argparse flags, --help's table, the forced degree, clean-error classes."""

import argparse
import sys

import numpy as np
import pytest

from flexflow_keras import config, flags_help
from flexflow_keras.errors import ConfigError, DataError, ShapeError, StrategyError
from flexflow_keras.utils import cli_errors, flag_checks
from runtime.errors import MachineError, OutOfMemoryError, TaskError


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    config.reset()
    monkeypatch.setattr(sys, "argv", ["train.py"])
    monkeypatch.setattr(flag_checks, "_said", set())
    monkeypatch.setattr(flag_checks, "declared", set())
    monkeypatch.setattr(flag_checks, "_parsers", [])
    yield
    config.reset()


@pytest.fixture
def watched(monkeypatch):
    """argparse as a script run from a shell sees it (restored after the test)."""
    monkeypatch.setattr(argparse._ActionsContainer, "add_argument", argparse._ActionsContainer.add_argument)
    monkeypatch.setattr(argparse.ArgumentParser, "__init__", argparse.ArgumentParser.__init__)
    monkeypatch.setattr(argparse.ArgumentParser, "format_help", argparse.ArgumentParser.format_help)
    flag_checks.watch_argparse()
    flags_help.install()


@pytest.mark.parametrize("arg, match", [
    ("--epoch", "--epochs"), ("--batchsize", "--batch-size"), ("--print_freq", "--print-freq"),
    ("--data-paralel-degree", "--data-parallel-degree"), ("--epochs3", "--epochs"), ("-epochs", "--epochs"),
    ("--batch-size=9", None), ("--serch-budget=9", "--search-budget"), ("-bb", "-b"), ("-eee", "-e"),
])
def test_near_misses_of_long_flags_name_the_closest(arg, match):
    err = flag_checks.unknown_flag([arg, "3"], config._FLAGS)
    if match is None:
        assert err is None  # a flag of ours
    else:
        assert isinstance(err, ConfigError) and f"did you mean {match}?" in str(err)


@pytest.mark.parametrize("args", [["--lr", "0.1"], ["--name", "run1"], ["-v"], ["-3"], ["data.npz"],
                                  ["--", "--epoch"], ["-bs", "8"], ["-vv"]])
def test_arguments_that_are_not_near_misses_pass(args):
    assert flag_checks.unknown_flag(args, config._FLAGS) is None


def test_flags_the_script_declares_are_the_scripts(watched, monkeypatch):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epoch", type=int)
    group = parser.add_argument_group("data")
    group.add_argument("--batchsize-per-gpu", type=int)
    assert {"--epoch", "--batchsize-per-gpu", "-h", "--help"} <= flag_checks.declared
    monkeypatch.setattr(sys, "argv", ["train.py", "--epoch", "3", "--batchsize", "4"])
    config.check_script_args()  # --epoch is declared; --batchsize abbreviates the declared --batchsize-per-gpu


def test_an_undeclared_near_miss_is_an_error_when_the_runtime_is_built(watched, monkeypatch):
    argparse.ArgumentParser().add_argument("--lr")
    monkeypatch.setattr(sys, "argv", ["train.py", "--lr", "1", "--batchsize", "4"])
    with pytest.raises(ConfigError, match="Unknown flag --batchsize: did you mean --batch-size"):
        config.check_script_args()


def test_help_table_comes_from_the_flag_table():
    text = flags_help.help_text()
    for flag in config._FLAGS:
        assert flag in text
    assert set(flags_help.MEANINGS) == set(config._KINDS)  # every setting has its one-line meaning
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("-ll:zsize"))
    assert "256" in line and "(>= 1)" in line
    assert "FF_EPOCHS" in text


def test_argparse_help_gets_our_section(watched):
    parser = argparse.ArgumentParser(description="mine")
    parser.add_argument("--lr", help="learning rate")
    text = parser.format_help()
    assert "learning rate" in text and "flexflow_keras flags" in text and "-ll:gpu" in text


def test_help_request_exits_zero(capsys):
    with pytest.raises(SystemExit) as stop:
        flags_help.maybe_exit(["-e", "2", "--help"], final=True)
    assert stop.value.code == 0
    assert "-ll:gpu" in capsys.readouterr().out
    flags_help.maybe_exit(["-e", "2"], final=True)  # no help asked: nothing happens


def test_a_script_dash_h_of_its_own_is_not_help(watched):
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-h", "--height", type=int)
    assert not flags_help.requested(["-h", "3"])
    assert flags_help.requested(["--help"])


def test_forced_degree_more_pieces_than_samples_is_an_error():
    with pytest.raises(ConfigError) as err:
        flag_checks.check_degree(128, 64, 4, "CPU")
    assert "--data-parallel-degree 128" in str(err.value) and "1, 2, 4, 8, 16, 32, 64" in str(err.value)


def test_forced_degree_uneven_or_above_the_processors_warns(caplog):
    with caplog.at_level("WARNING", logger="flexflow_keras"):
        flag_checks.check_degree(4, 64, 4, "CPU")
        assert caplog.text == ""  # even pieces, one per processor
        flag_checks.check_degree(3, 64, 4, "CPU")
        assert "1 piece(s) of 22 and 2 of 21 samples" in caplog.text and "1, 2, 4" in caplog.text
        flag_checks.check_degree(8, 64, 4, "CPU")
        assert "pieces k and k+4 share a processor" in caplog.text


@pytest.mark.parametrize("exc, code", [
    (ConfigError("x"), 2), (StrategyError("x"), 2), (MachineError("x"), 2), (DataError("x"), 1),
    (ShapeError("x"), 1),
    (OutOfMemoryError("x", region="r", memory="m", requested=2, free=1, flag="-ll:zsize"), 1),
])
def test_user_errors_and_their_exit_codes(exc, code):
    assert cli_errors.is_user_error(exc) and cli_errors.exit_code(exc) == code


def _task_error(cause):
    err = TaskError("task failed", task="load", point=(), processor="CPU 0", failed_task="load", failed_point=())
    err.__cause__ = cause
    return err


def test_a_task_failing_on_a_user_error_is_clean_and_a_bug_is_not():
    clean = _task_error(DataError("bad file"))
    assert cli_errors.is_user_error(clean) and cli_errors.exit_code(clean) == 1
    assert "bad file" in cli_errors.message(clean) and "task load" in cli_errors.message(clean)
    assert not cli_errors.is_user_error(_task_error(ZeroDivisionError("bug")))
    assert not cli_errors.is_user_error(ValueError("not ours"))


def _caught(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test inspects whatever it raised
        return exc
    raise AssertionError("nothing raised")


def test_an_argument_check_of_ours_is_clean_and_other_value_errors_are_not():
    """A layer's ValueError for a bad argument (Keras' type) comes from a `raise` of ours: one clean block.
    A ValueError raised by the script, or a TypeError Python raises inside our code, keeps its traceback."""
    from flexflow_keras import layers

    ours = _caught(lambda: layers.Conv3D(2, 3, strides=2, dilation_rate=2))
    assert type(ours) is ValueError and cli_errors.is_user_error(ours)
    assert "cannot be combined with dilation_rate" in cli_errors.message(ours)

    def script():
        raise ValueError("the script's own check")

    assert not cli_errors.is_user_error(_caught(script))
    from kernels._conv_geometry import out_size
    from kernels.conv3d import conv3d_forward_cpu

    inside = _caught(lambda: out_size(None, 3, 1, "valid"))  # Python's TypeError in a kernel helper: a bug
    assert type(inside) is TypeError and not cli_errors.is_user_error(inside)
    kernel_check = _caught(lambda: conv3d_forward_cpu(np.zeros((1, 2, 2, 2, 1), "float32"),  # a kernel's own
                                                      np.zeros((3, 3, 3, 1, 1), "float32"), None,  # check: ours
                                                      np.zeros((1, 1, 1, 1, 1), "float32")))  # to fix
    assert type(kernel_check) is ValueError and not cli_errors.is_user_error(kernel_check)
    assert not cli_errors.is_user_error(_task_error(ours))  # a task body's ValueError: a bug of ours


def test_usage_errors_point_at_help():
    text = cli_errors.message(ConfigError("-e/--epochs must be ..."))
    assert text.startswith("flexflow_keras: error: -e/--epochs") and "--help" in text and "--debug" in text


def test_a_runtime_flag_with_two_dashes_is_named_with_one():
    """`--ll:gpu 4` (a typo of -ll:gpu) went to the script's argparse, which ignored it: training ran on the CPU."""
    import pytest

    from flexflow_keras.config import parse_args
    from flexflow_keras.errors import ConfigError
    from flexflow_keras.utils.flag_checks import unknown_flag

    with pytest.raises(ConfigError, match="did you mean -ll:gpu"):
        parse_args(["--ll:gpu", "4", "-e", "1"])
    known = ["-e", "--epochs", "-ll:gpu", "-ll:cpu", "-lg:prof"]
    assert "did you mean -lg:prof?" in str(unknown_flag(["--lg:prof"], known))
    assert unknown_flag(["--ll:gpu"], known, script=["--ll:gpu"]) is None  # a script that declares it keeps it
