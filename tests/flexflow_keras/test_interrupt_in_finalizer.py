"""A Ctrl-C that arrives while a finalizer runs is not lost: Python swallows exceptions raised in
finalizers ("Exception ignored in ..."), and flexflow_keras sends the SIGINT again so that the program
is interrupted outside the finalizer. Run in a fresh interpreter: the signal must not reach pytest."""

import signal
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os, signal, sys, threading, time, weakref
    if sys.argv[1] == "guarded":
        import flexflow_keras  # noqa: F401 - installs the guard
    def slow_finalizer():
        t = time.monotonic()
        while time.monotonic() - t < 0.5:
            pass
    class Held:
        pass
    try:
        held = Held()
        weakref.finalize(held, slow_finalizer)
        threading.Timer(0.1, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        del held  # the finalizer runs now, and the signal arrives during it
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            pass
        print("not interrupted")
    except KeyboardInterrupt:
        print("interrupted")
""")


def _run(mode):
    proc = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # see test_interrupt
    return proc.stdout.strip(), proc.stderr


def test_a_ctrl_c_swallowed_by_a_finalizer_is_raised_again():
    out, err = _run("guarded")
    assert out == "interrupted", err[-2000:]
    assert "Exception ignored" not in err and "Traceback" not in err, err[-2000:]


def test_without_the_guard_python_loses_it():
    """The control: plain Python loses the interrupt, so the test above would fail without the guard."""
    out, err = _run("plain")
    assert out == "not interrupted"
    assert "Exception ignored" in err
