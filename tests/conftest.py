"""Suite-wide test setup: CUDA test folders (`tests/**/cuda/`) run under NUMBA_ENABLE_CUDASIM=1 (their
sim driver tests start them in a subprocess, since numba reads the variable at import) or on a real GPU;
otherwise they skip. The strategy search's caches go to a temporary folder of the session. Tests marked
``background`` have their long subprocess started when collection ends (tests/background_runs.py).

Under pytest-xdist (the README's command: ``-n 2 --dist loadfile``) each worker runs whole files; the files
that take longest go first so that the two workers end together, and the background tests' commands run in
their own tests (the other worker already keeps the second core busy). The terminal summary adds up the
workers' figures."""

import atexit
import importlib.util
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


# The files that took longest in a full run (seconds; 9f5f344's run on a 2-core AMD EPYC with AVX2), besides
# the files of background tests, which go first. Only the order of files under pytest-xdist depends on this
# list: a file missing from it still runs, only later.
LONG_FILES = (
    "tests/flexflow_keras/applications/test_applications_tf.py",  # 308 (before its eager references)
    "tests/kernels/test_cuda_ptx.py",  # 105
    "tests/flexflow_keras/metrics/test_metrics_extra_tf.py",  # 84
    "tests/e2e/test_mpi.py",  # 80
    "tests/e2e/test_keras2_corpus.py",  # 78
    "tests/e2e/test_interrupt.py",  # 71
    "tests/e2e/test_flags_cli.py",  # 58
    "tests/e2e/test_error_catalogue.py",  # 54
    "tests/flexflow_keras/search/test_search.py",  # 51
    "tests/kernels/test_conv_pool_tiles.py",  # 48
    "tests/flexflow_keras/models/test_keras_format.py",  # 47
    "tests/e2e/test_scripts.py",  # 45
    "tests/e2e/test_checkpoint_kill.py",  # 44
    "tests/kernels/test_conv_simd.py",  # 41
    "tests/e2e/test_failures.py",  # 40
    "tests/flexflow_keras/metrics/test_metrics_new_tf.py",  # 40
    "tests/flexflow_keras/execution/test_store_budget.py",  # 39
)


def _xdist_worker() -> bool:
    return bool(os.environ.get("PYTEST_XDIST_WORKER"))


def _long_first(items) -> None:
    """Sort ``items`` (stably) so that the files of background tests, then LONG_FILES, come first."""
    background = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("background")}
    rank = {name: i for i, name in enumerate(LONG_FILES)}

    def key(item):
        name = item.nodeid.split("::")[0]
        return (0, 0) if name in background else (1, rank.get(name, len(rank)))

    items.sort(key=key)


def pytest_collection_modifyitems(config, items):
    if _xdist_worker():
        _long_first(items)
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
        if marker is not None:
            marker.args[0].label = marker.args[0].label or item.nodeid
            if item.get_closest_marker("skip") is None:
                commands.append(marker.args[0])
    if not _xdist_worker():  # a worker's tests run their commands themselves
        background_runs.start(commands)


def pytest_sessionfinish(session):
    background_runs.stop_all()
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: its figures go to the controller's summary
        workeroutput["ff_numba"] = numba_compile_time.totals()
        workeroutput["ff_commands"] = background_runs.records()


_workers: list[dict] = []  # under pytest-xdist: each finished worker's figures


if importlib.util.find_spec("xdist") is not None:  # the hook exists only with pytest-xdist installed

    def pytest_testnodedown(node, error):
        """pytest-xdist's controller: keep a finished worker's figures for the summary."""
        output = getattr(node, "workeroutput", None) or {}
        if "ff_numba" in output:
            _workers.append(output)


def pytest_terminal_summary(terminalreporter):
    """Where the suite's time went, beside pytest's own figures: Numba's compiles in this process (or in
    the workers) and the background runs (tests/background_runs.py)."""
    if _workers:
        terminalreporter.write_line(numba_compile_time.summary([tuple(w["ff_numba"]) for w in _workers]))
        line = background_runs.summary_of_workers([tuple(r) for w in _workers for r in w["ff_commands"]])
    else:
        terminalreporter.write_line(numba_compile_time.summary())
        line = background_runs.summary()
    if line:
        terminalreporter.write_line(line)
