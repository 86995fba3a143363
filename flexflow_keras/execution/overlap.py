"""Step overlap: whether `fit` issues training steps without waiting for them, and how a failure of a
step that nobody waited for surfaces.

With the overlap on (the default), `Engine.issue_train` issues a step inside its trace with
``wait=False``: the host goes on to the next step (and the progress display) while the processors run
it, and waits only where a value is read (`Engine.collect_train`, the step window of
models/step_window.py). The runtime orders consecutive steps by their privileges (a replayed trace
starts behind the previous run's users of every field it touches), so the results are those of the
synchronous loop, bit for bit.

``FF_STEP_OVERLAP=0`` in the environment turns it off: every training step waits for its tasks at the
end of its trace and is read at once (the synchronous reference the tests compare against, and a way
to rule the overlap out when chasing a problem). It is read at each `fit`.

A step issued without waiting reports a failing task when its results are read: `raise_first_failure`
then waits for the whole step and raises the first failure among its tasks in issue order (the root
failure, with its task, point and processor), exactly what a waiting trace raises at its end; and
`check_step` does the same for a failed task whose result the read does not depend on.

A bad label or id found by a CUDA kernel does not fail its task: the kernel records it on the device
(kernels/gpu/checks.py) and `raise_device_failures` raises it where values are read.
"""

from __future__ import annotations

import os
import sys

from runtime.futures import Future

ENV_VAR = "FF_STEP_OVERLAP"


def enabled() -> bool:
    """Whether training steps are issued without waiting (``FF_STEP_OVERLAP`` unset, or not 0/false/off)."""
    return os.environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "off", "no")


def check_step(rtm, nodes) -> None:
    """After a step's results were read: when some task failed that nobody was told about (one whose
    result the read does not depend on, e.g. a BatchNormalization's moving-statistics update), raise
    the step's first failure (`raise_first_failure`). One list check when nothing failed."""
    if nodes and rtm.engine.failures:
        raise_first_failure(rtm, nodes)


def raise_first_failure(rtm, nodes) -> None:
    """Wait for every task node of a step issued without waiting and raise the first failure among them
    in issue order (its TaskError, as a waiting trace would raise it); return when none failed."""
    if not nodes:
        return
    futures = [Future(n, rtm.engine) for n in nodes]
    for f in futures:
        f.wait()
    for f in futures:
        if f.exception() is not None:
            f.get()  # raises the task's error and marks it reported


def raise_device_failures(wait: bool) -> None:
    """Raise the first bad label, id or index a CUDA kernel recorded on its device (kernels/gpu/checks.py):
    with `wait`, after reading every check (the end of an epoch, evaluate and predict steps); without, only
    those whose copy to the host has landed (a progress update: the steps in flight keep running). Nothing
    to do where no CUDA kernel has checked anything (the module is then not even imported)."""
    checks = sys.modules.get("kernels.gpu.checks")
    if checks is not None:
        checks.raise_failures(wait)


def clear_device_failures() -> None:
    """Forget bad ids a CUDA kernel recorded in an earlier run that stopped before reading them."""
    checks = sys.modules.get("kernels.gpu.checks")
    if checks is not None:
        checks.clear_all()
