"""Suite-wide test setup: CUDA test folders (`tests/**/cuda/`) run under NUMBA_ENABLE_CUDASIM=1 (their
sim driver tests start them in a subprocess, since numba reads the variable at import) or on a real GPU;
otherwise they skip. The strategy search's caches go to a temporary folder of the session. Tests marked
``background`` have their long subprocess started when collection ends (tests/background_runs.py)."""

import atexit
import os
import shutil
import tempfile

import background_runs  # tests/background_runs.py
import numba_compile_time  # tests/numba_compile_time.py
import pytest

# The search's cost and strategy caches live in a folder of this test session, never in ~/.cache.
if "FF_CACHE_DIR" not in os.environ:
    os.environ["FF_CACHE_DIR"] = tempfile.mkdtemp(prefix="ff_cache_tests_")
    atexit.register(shutil.rmtree, os.environ["FF_CACHE_DIR"], ignore_errors=True)

numba_compile_time.install()

# A simulator run started by a CUDA driver test records each kernel launch's signature (tests/cuda_launch_log.py).
if os.environ.get("FF_CUDA_LAUNCH_LOG") and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    from kernels.gpu.signatures import install_recorder

    install_recorder(__import__("pathlib").Path(os.environ["FF_CUDA_LAUNCH_LOG"]))


def _cuda_usable() -> bool:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return True
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - any failure to load the driver means no GPU here
        return False


def pytest_collection_modifyitems(config, items):
    if _cuda_usable():
        return
    skip = pytest.mark.skip(reason="no GPU and NUMBA_ENABLE_CUDASIM is not set (the sim driver test runs these)")
    for item in items:
        if "/cuda/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(skip)


def pytest_collection_finish(session):
    """Start the selected background tests' subprocesses, in collection order, beside the main process."""
    if session.config.option.collectonly:
        return
    commands = []
    for item in session.items:
        marker = item.get_closest_marker("background")
        if marker is not None and item.get_closest_marker("skip") is None:
            marker.args[0].label = marker.args[0].label or item.nodeid
            commands.append(marker.args[0])
    background_runs.start(commands)


def pytest_sessionfinish(session):
    background_runs.stop_all()


def pytest_terminal_summary(terminalreporter):
    """Where the suite's time went, beside pytest's own figures: Numba's compiles in this process and
    the background runs (tests/background_runs.py)."""
    terminalreporter.write_line(numba_compile_time.summary())
    line = background_runs.summary()
    if line:
        terminalreporter.write_line(line)
