"""The runtime's compiled modules (setup.py, runtime/_compiled.py): built by the install, the same
behaviour interpreted, and never a stale or partial build in place of the sources."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import runtime as rt
from runtime import _compiled, fpenv

ROOT = Path(__file__).resolve().parents[2]
SUFFIX = _compiled.importlib.machinery.EXTENSION_SUFFIXES[0]


def test_the_compiled_set_is_the_modules_with_declarations():
    """setup.py compiles the runtime modules with a .pxd; _compiled.COMPILED must name the same ones
    (a wheel carries no .pxd, so the guard cannot find them by looking)."""
    stems = {p.stem for p in (ROOT / "runtime").glob("*.pxd") if p.with_suffix(".py").is_file()}
    assert stems == set(_compiled.COMPILED)


@pytest.mark.skipif(os.environ.get("FF_INTERPRETED", "") not in ("", "0"), reason="FF_INTERPRETED is set")
def test_the_install_built_them_and_they_are_what_runs():
    missing = [name for name, src in _compiled.compiled_sources().items() if _compiled.extension_of(src) is None]
    assert not missing, f"{missing} are not built: run `python -m pip install -e .` (it compiles them)"
    assert _compiled.INTERPRETED == {}
    assert _compiled.all_compiled(), _compiled.status()


def _touch(path: Path, t: float) -> Path:
    path.write_text("")
    os.utime(path, (t, t))
    return path


@pytest.fixture
def fake_set(tmp_path, monkeypatch):
    """A fake compiled set a, b in tmp_path; returns a function setting each file's time (None: absent)."""
    monkeypatch.setattr(_compiled, "_HERE", tmp_path)
    monkeypatch.setattr(_compiled, "COMPILED", ("a", "b"))
    monkeypatch.delenv("FF_INTERPRETED", raising=False)
    before = list(sys.meta_path)

    def make(**times):
        for stem in ("a", "b"):
            for kind, suffix in (("py", ".py"), ("pxd", ".pxd"), ("so", SUFFIX)):
                t = times.get(f"{stem}_{kind}", 1000.0 if kind != "so" else 2000.0)
                path = tmp_path / f"{stem}{suffix}"
                if t is None:
                    path.unlink(missing_ok=True)
                else:
                    _touch(path, t)
        return _compiled.install()

    yield make
    sys.meta_path[:] = before


def _routed() -> dict:
    finder = sys.meta_path[0]
    return finder.sources if isinstance(finder, _compiled._SourceFinder) else {}


def test_fresh_builds_route_nothing(fake_set):
    before = list(sys.meta_path)
    assert fake_set() == {}
    assert sys.meta_path == before
    assert fake_set(a_so=1001.0, b_so=1001.5) == {}  # within the slack of a wheel install


def test_nothing_built_routes_nothing(fake_set):
    assert fake_set(a_so=None, b_so=None) == {}


def test_an_edited_source_sends_the_whole_set_to_its_sources(fake_set, tmp_path, caplog):
    with caplog.at_level("WARNING", logger="runtime"):
        got = fake_set(b_py=5000.0)
    assert set(got) == {"runtime.a", "runtime.b"}
    assert "runtime.a" in got["runtime.a"] and "older" in got["runtime.a"]
    assert _routed()["runtime.a"] == tmp_path / "a.py"
    assert sys.meta_path[0].find_spec("runtime.a").origin == str(tmp_path / "a.py")
    assert sys.meta_path[0].find_spec("runtime.other") is None
    assert "pip install -e ." in caplog.text


def test_an_edited_declaration_of_one_module_makes_every_build_stale(fake_set):
    """Rebuilding graph after its .pxd changed leaves tracing's build reading the old layout."""
    got = fake_set(a_pxd=5000.0, a_so=6000.0)
    assert set(got) == {"runtime.a", "runtime.b"} and "runtime.b" in got["runtime.b"]


def test_a_partial_build_sends_the_whole_set_to_its_sources(fake_set, caplog):
    with caplog.at_level("WARNING", logger="runtime"):
        got = fake_set(b_so=None)
    assert set(got) == {"runtime.a", "runtime.b"} and "runtime.b is not built" in got["runtime.a"]
    assert set(_routed()) == {"runtime.a", "runtime.b"}
    assert "pip install -e ." in caplog.text


def test_ff_interpreted_routes_quietly(fake_set, monkeypatch, caplog):
    monkeypatch.setenv("FF_INTERPRETED", "1")
    with caplog.at_level("WARNING", logger="runtime"):
        got = fake_set()
    assert set(got) == {"runtime.a", "runtime.b"} and not caplog.text


def test_str_subclasses_pass_where_str_is_annotated():
    """Compiled annotations must not type arguments (annotation_typing=False): a str annotation would
    reject numpy.str_ field names and str subclasses that the runtime's own checks accept."""

    class Name(str):
        pass

    R = rt.Region.fields((4,), {np.str_("a"): np.float32})
    with rt.Runtime(rt.Machine(cpus=1)) as rtm:
        rtm.fill(R, 1.0)
        for _ in range(2):
            with rtm.trace(Name("t")):
                rtm.fill(R, 2.0)
        assert rtm.read(R)["a"].tolist() == [2.0] * 4


@pytest.mark.slow
def test_the_runtime_tests_pass_interpreted():
    """The .py sources are the fallback where nothing is built: they must pass the same tests."""
    env = dict(os.environ, FF_INTERPRETED="1")
    code = ("import runtime._compiled as c; c.all_compiled(); "
            "assert not any(c.status().values()), c.status()")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=str(ROOT), timeout=120)
    tests = ["tests/runtime/test_runtime_tracing.py", "tests/runtime/test_runtime_chained_replays.py",
             "tests/runtime/test_runtime_failures.py", "tests/runtime/test_runtime_tasks.py",
             "tests/runtime/test_runtime_cancel.py", "tests/runtime/test_fpenv.py",
             "tests/runtime/test_compiled.py"]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k",
                           "not test_the_runtime_tests_pass_interpreted", *tests], env=env,
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
