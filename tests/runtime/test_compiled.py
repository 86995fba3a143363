"""The runtime's compiled modules (setup.py, runtime/_compiled.py): built by the install, the same
behaviour interpreted, and never a stale build in place of its source."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime import _compiled, fpenv

ROOT = Path(__file__).resolve().parents[2]
NAMES = {"runtime.analysis", "runtime.graph", "runtime.launching", "runtime.reductions", "runtime.trace_record",
         "runtime.tracing", "runtime.workers"}


def test_the_modules_with_declarations_are_the_compiled_ones():
    assert set(_compiled.compiled_sources()) == NAMES


@pytest.mark.skipif(os.environ.get("FF_INTERPRETED", "") not in ("", "0"), reason="FF_INTERPRETED is set")
def test_the_install_built_them_and_they_are_what_runs():
    import runtime.graph
    import runtime.tracing
    import runtime.workers  # noqa: F401

    missing = [name for name, src in _compiled.compiled_sources().items() if _compiled.extension_of(src) is None]
    assert not missing, f"{missing} are not built: run `python -m pip install -e .` (it compiles them)"
    assert _compiled.INTERPRETED == {}
    assert all(_compiled.status().values()), _compiled.status()


def _touch(path: Path, t: float) -> Path:
    path.write_text("")
    os.utime(path, (t, t))
    return path


def test_a_stale_extension_sends_every_compiled_module_to_its_source(tmp_path, monkeypatch, caplog):
    suffix = _compiled.importlib.machinery.EXTENSION_SUFFIXES[0]
    for stem, py_t in (("a", 1000.0), ("b", 5000.0)):  # b.py edited after its build
        _touch(tmp_path / f"{stem}.py", py_t)
        _touch(tmp_path / f"{stem}.pxd", 1000.0)
        _touch(tmp_path / f"{stem}{suffix}", 2000.0)
    _touch(tmp_path / "c.py", 9000.0)  # no .pxd: not a compiled module
    monkeypatch.setattr(_compiled, "_HERE", tmp_path)
    monkeypatch.delenv("FF_INTERPRETED", raising=False)
    before = list(sys.meta_path)
    try:
        with caplog.at_level("WARNING", logger="runtime"):
            got = _compiled.install()
        finder = sys.meta_path[0]
        assert finder not in before
        assert finder.find_spec("runtime.a").origin == str(tmp_path / "a.py")
        assert finder.find_spec("runtime.c") is None
    finally:
        sys.meta_path[:] = before
    assert got == {"runtime.a": "another compiled module runs interpreted",
                   "runtime.b": f"b{suffix} is older than b.py"}
    assert "pip install -e ." in caplog.text and "runtime.b" in caplog.text


def test_fresh_extensions_route_nothing(tmp_path, monkeypatch):
    suffix = _compiled.importlib.machinery.EXTENSION_SUFFIXES[0]
    _touch(tmp_path / "a.py", 1000.0)
    _touch(tmp_path / "a.pxd", 1000.0)
    _touch(tmp_path / f"a{suffix}", 1000.5)  # within the slack of a wheel install: not stale
    _touch(tmp_path / "b.py", 1000.0)
    _touch(tmp_path / "b.pxd", 3000.0)  # an edited .pxd makes its build stale too
    monkeypatch.setattr(_compiled, "_HERE", tmp_path)
    assert not _compiled.stale(tmp_path / "a.py", tmp_path / f"a{suffix}")
    _touch(tmp_path / f"b{suffix}", 1000.0)
    assert _compiled.stale(tmp_path / "b.py", tmp_path / f"b{suffix}")
    (tmp_path / f"b{suffix}").unlink()
    monkeypatch.delenv("FF_INTERPRETED", raising=False)
    before = list(sys.meta_path)
    assert _compiled.install() == {}
    assert sys.meta_path == before


@pytest.mark.slow
def test_the_runtime_tests_pass_interpreted():
    """The .py sources are the fallback where nothing is built: they must pass the same tests."""
    env = dict(os.environ, FF_INTERPRETED="1")
    code = ("import runtime, runtime.graph, runtime.tracing, runtime.workers, runtime._compiled as c;"
            "assert not any(c.status().values()), c.status()")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=str(ROOT), timeout=120)
    tests = ["tests/runtime/test_runtime_tracing.py", "tests/runtime/test_runtime_chained_replays.py",
             "tests/runtime/test_runtime_failures.py", "tests/runtime/test_runtime_tasks.py",
             "tests/runtime/test_runtime_cancel.py", "tests/runtime/test_fpenv.py"]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], env=env,
                          capture_output=True, text=True, cwd=str(ROOT), timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_the_compiled_mxcsr_calls_match_the_numba_ones():
    if not fpenv.supported():
        pytest.skip("MXCSR is x86-64 only")
    from runtime import _mxcsr

    try:
        from runtime import _fpcsr
    except ImportError:
        pytest.fail("runtime._fpcsr is not built: run `python -m pip install -e .`")
    word = _fpcsr.get_word()
    assert word == _mxcsr.get_word()
    old = _fpcsr.flush_denormals()
    try:
        assert old == word and fpenv.flushes(_mxcsr.get_word())
    finally:
        _fpcsr.restore(old)
    assert _mxcsr.get_word() == word
    _fpcsr.restore(None)  # nothing to do
    assert fpenv.flush_denormals is _fpcsr.flush_denormals
