"""Test helper: run a simulator subprocess with the launch recorder on, then check that every kernel
signature it launched is in kernels/gpu/launch_signatures.json (the list the PTX test compiles).

``FF_UPDATE_CUDA_SIGNATURES=1`` adds the missing signatures to the file instead of failing; commit it.
"""

import os
import subprocess
import sys
from pathlib import Path

import background_runs  # tests/background_runs.py

from kernels.gpu import signatures

# A script run with ``python -c`` (no conftest) starts with this line to record its launches.
RECORD_PRELUDE = ("import os\nif os.environ.get('FF_CUDA_LAUNCH_LOG') and os.environ.get('NUMBA_ENABLE_CUDASIM') == '1':\n"
                  "    from kernels.gpu.signatures import install_recorder\n"
                  "    install_recorder(__import__('pathlib').Path(os.environ['FF_CUDA_LAUNCH_LOG']))\n")


def with_launch_log(env: dict, log: Path) -> dict:
    """`env` plus the recorder's log path (only recorded under the simulator)."""
    if log.exists():
        log.unlink()
    return dict(env, FF_CUDA_LAUNCH_LOG=str(log))


def check_launch_log(log: Path) -> None:
    """Fail naming each recorded launch whose signature the registry lacks (or add them, see above)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "1") == "0" and not log.exists():
        return  # a real-GPU run: the recorder only works under the simulator
    assert log.exists(), f"the simulator run wrote no launch log at {log}"
    missing = signatures.missing_signatures(log)
    if missing and os.environ.get("FF_UPDATE_CUDA_SIGNATURES") == "1":
        signatures.merge_signatures(log)
        return
    unknown = [n for n, _ in missing if n.startswith("?")]
    assert not unknown, (f"kernels launched that kernels.gpu.signatures.iter_kernels does not find: {unknown}; "
                         "add their module to KERNEL_MODULES (factory kernels: a cuda_kernels() function)")
    assert not missing, ("kernel launches with signatures missing from kernels/gpu/launch_signatures.json "
                         "(rerun with FF_UPDATE_CUDA_SIGNATURES=1 and commit the file):\n"
                         + "\n".join(f"  {n}{s}" for n, s in missing[:20]))


def _simulated_spec(script: str, work: Path, timeout: int) -> dict:
    env = with_launch_log(dict(os.environ), work / "launches.jsonl")
    # FF_CUDA_DEVICE=1 (or NUMBA_ENABLE_CUDASIM=0) runs the script on a real GPU
    env["NUMBA_ENABLE_CUDASIM"] = "0" if env.get("FF_CUDA_DEVICE") == "1" else env.get("NUMBA_ENABLE_CUDASIM", "1")
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env["FF_LOG_LEVEL"] = "WARNING"
    return dict(args=[sys.executable, "-c", RECORD_PRELUDE + script], env=env, cwd=root, timeout=timeout)


def _checked(proc: subprocess.CompletedProcess, work: Path) -> str:
    assert proc.returncode == 0, f"CUDA kernel check failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    check_launch_log(work / "launches.jsonl")
    return proc.stdout


def run_simulated(script: str, tmp_path: Path, timeout: int = 300) -> str:
    """Run `script` (with the recorder's prelude) in a subprocess under the CUDA simulator (unless
    NUMBA_ENABLE_CUDASIM=0 asks for a real GPU), with the repository on the path; fail with its output
    when it fails, check its launches' signatures, and return its stdout."""
    spec = _simulated_spec(script, tmp_path, timeout)
    proc = subprocess.run(spec.pop("args"), capture_output=True, text=True, **spec)
    return _checked(proc, tmp_path)


def simulated_command(script: str, timeout: int = 300) -> background_runs.Command:
    """`run_simulated` as a background command (tests/background_runs.py): mark the test with
    ``@pytest.mark.background(cmd)`` and read its stdout with ``simulated_stdout(cmd)``."""
    return background_runs.Command(lambda work: _simulated_spec(script, work, timeout))


def simulated_stdout(command: background_runs.Command) -> str:
    """The background command's stdout, after the checks of `run_simulated`."""
    return _checked(*command.result())


def simulated_pytest(target: Path, timeout: int = 900) -> background_runs.Command:
    """A child pytest of `target` (a CUDA test folder or file) under the simulator, as a background
    command: mark the test with ``@pytest.mark.background(cmd)`` and check it with
    ``check_simulated_pytest(cmd)``."""
    root = Path(__file__).resolve().parents[1]

    def spec(work: Path) -> dict:
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
                   PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        return dict(args=[sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                          "-W", "ignore::RuntimeWarning", str(target)],
                    cwd=root, timeout=timeout, env=with_launch_log(env, work / "launches.jsonl"))

    return background_runs.Command(spec)


def check_simulated_pytest(command: background_runs.Command) -> None:
    """The child pytest passed, skipped nothing, and launched only registered kernel signatures."""
    proc, work = command.result()
    out = proc.stdout + proc.stderr
    first = proc.stdout.find("= FAILURES =")  # the failure's own text, before any --durations listing
    failure = proc.stdout[first:first + 6000] + "\n...\n" if first >= 0 else ""
    assert proc.returncode == 0, (f"the CUDA simulator tests failed:\n{failure}{proc.stdout[-3000:]}\n"
                                  f"{proc.stderr[-3000:]}")
    assert " passed" in proc.stdout and "skipped" not in proc.stdout.splitlines()[-1], out[-2000:]
    check_launch_log(work / "launches.jsonl")
