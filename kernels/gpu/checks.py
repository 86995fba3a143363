"""Bad-index checks that stay on the device until the host reads values anyway.

Sparse crossentropy labels, Embedding and CategoryEncoding ids and gather / take_along_axis indices can be
out of range. A CPU kernel returns the first bad position and the op raises at once. A CUDA kernel would
have to read that position back from the device, and a device-to-host read inside a GPU task waits for
the device: every training step would stop the pipeline once per such op.

So a CUDA kernel given a `DeviceCheck` records the first bad index in the check's small device buffer
(flat position, value, a flag) and returns at once; the kernels skip or wrap the bad index, so nothing is
read or written out of bounds. The buffer is sticky: once the flag is set, later launches leave it alone,
so the first failure survives until the host looks. Each launch also queues an asynchronous copy of the
buffer into pinned host memory and an event on the same stream. The host looks where it reads values
anyway: at a progress update it only peeks at copies whose event has passed (`raise_failures(wait=False)`:
no waiting, so the steps in flight keep running), at the end of an epoch and after each evaluate or predict
step it reads every buffer launched since it was last read clean (`wait=True`). The op's message is raised there, naming the op, the position and
the value. A kernel called without a check (standalone use, the kernel tests) reads the position back at
once, as before.
"""

from __future__ import annotations

import contextlib
import threading
import weakref

import numpy as np
from numba import cuda, int64

from kernels.gpu.launch import current_stream, launch

POS, VALUE, FLAG = 0, 1, 2  # the buffer's slots (int64; a float id or label is kept truncated)
_NONE = np.iinfo(np.int64).max
_checks: dict = {}  # key -> DeviceCheck
_recorded: set = set()  # checks launched since they were last read clean (the ones worth reading)
_lock = threading.Lock()


@cuda.jit(device=True)
def note_bad(bad, i):
    """In a kernel: offer flat position `i` as the first bad one (ignored once a failure is recorded)."""
    if bad[2] == 0:
        cuda.atomic.min(bad, 0, i)


@cuda.jit
def _record(bad, ids):
    # one thread, after the kernel that called note_bad: keep the value at the first bad position and
    # set the flag, so later launches leave the buffer alone
    if cuda.grid(1) == 0 and bad[2] == 0 and bad[0] < ids.size:
        bad[1] = int64(ids[bad[0]])
        bad[2] = 1


def _fresh():
    return np.array([_NONE, 0, 0], np.int64)


class DeviceCheck:
    """One op's sticky record of its first bad index on one device.

    Args:
        describe: (flat position, value) -> the exception to raise (the op's message).
    """

    def __init__(self, describe, device: int = 0):
        self.describe = describe
        self.device = device
        self.buf = cuda.to_device(_fresh())  # once per op and device (a synchronous copy)
        self.stream = None  # the stream of the latest launch that wrote it
        self._host = None  # pinned copy of buf, written on the stream after each launch
        self._event = None  # passed when that copy has landed

    def record(self, ids_flat) -> None:
        """Queue the recording of the bad value after the checking kernel (same stream), then the copy of
        the buffer to pinned host memory that `peek` reads."""
        stream = self.stream = current_stream()
        launch(_record, 1, self.buf, ids_flat)
        with _lock:
            _recorded.add(self)
        if stream is None or hasattr(stream, "enqueue") or _simulated():
            return  # the default stream, or the simulator (whose launches have run): `read` serves
        if self._host is None:
            self._host = cuda.pinned_array(3, np.int64)
            self._event = cuda.event(timing=False)
        self.buf.copy_to_host(self._host, stream=stream)
        self._event.record(stream)

    def peek(self) -> tuple[int, int] | None:
        """(position, value) of a failure whose copy has already landed, else None (never waits on a real
        GPU; in the simulator, where nothing runs asynchronously, the same as `read`)."""
        if self._event is None:
            return self.read() if _simulated() else None
        if not self._event.query():
            return None
        host = self._host
        return (int(host[POS]), int(host[VALUE])) if host[FLAG] else None

    def read(self) -> tuple[int, int] | None:
        """(position, value) of the recorded failure, or None; waits for the stream that wrote it."""
        with _on_device(self.device):
            if self.stream is not None:
                self.stream.synchronize()
            host = self.buf.copy_to_host()
        if host[FLAG] == 0:
            return None
        return int(host[POS]), int(host[VALUE])

    def clear(self) -> None:
        """Forget the recorded failure (after the copies still in flight have landed)."""
        with _on_device(self.device):
            if self.stream is not None:
                self.stream.synchronize()
            self.buf.copy_to_device(_fresh())
        if self._host is not None:
            self._host[:] = _fresh()


def check_for(key, describe, owner=None) -> DeviceCheck:
    """The check of `key` on the current device, made on first use (and dropped when `owner`, the op it
    belongs to, is collected); `describe` is refreshed at each call."""
    device = getattr(cuda.get_current_device(), "id", 0)  # (the simulator's device has no id)
    full = (key, device)
    with _lock:
        check = _checks.get(full)
        if check is None:
            check = _checks[full] = DeviceCheck(describe, device)
            if owner is not None:
                with contextlib.suppress(TypeError):  # an owner that takes no weak reference keeps its check
                    weakref.finalize(owner, _drop, full)
    check.describe = describe
    return check


def _drop(full) -> None:
    with _lock:
        _checks.pop(full, None)


def _on_device(device: int):
    """The context of `device` for host reads and writes of a check (none in the simulator)."""
    if _simulated():
        return contextlib.nullcontext()
    return cuda.gpus[device]


def first_bad_now(bad, n: int) -> int:
    """A check buffer's first bad position read back at once (kernels called without a DeviceCheck), -1
    when none is below `n`."""
    stream = current_stream()
    if stream is not None:  # the check (and whatever wrote the ids) must have run before the read
        stream.synchronize()
    pos = bad.copy_to_host()[POS]
    return int(pos) if pos < n else -1


def buffer(check: DeviceCheck | None):
    """The buffer a checking kernel writes: `check`'s, or a fresh one for an immediate check."""
    return cuda.to_device(_fresh()) if check is None else check.buf


def result(check: DeviceCheck | None, bad, ids_flat, n: int) -> int:
    """What a checking kernel returns after its launch: -1 with a `check` (its record queued behind the
    launch, nothing read back), else the first bad position read back at once (`first_bad_now`)."""
    if check is not None:
        check.record(ids_flat)
        return -1
    return first_bad_now(bad, n)


def raise_failures(wait: bool = True) -> None:
    """Raise the first recorded failure of any check, after clearing every check that has one (two ops,
    or one op on two GPUs, often fail in the same step: a later run must start clean); without `wait`,
    only failures whose copy to the host has landed (see the module docstring)."""
    with _lock:
        checks = list(_recorded)
    found = []
    for check in checks:
        got = check.read() if wait else check.peek()
        if got is not None:
            found.append((check, got))
        elif wait:  # read clean after its last launch: nothing to look at until it runs again
            with _lock:
                _recorded.discard(check)
    for check, _ in found:
        check.clear()
        with _lock:
            _recorded.discard(check)
    if found:
        check, got = found[0]
        raise check.describe(*got)


def clear_all() -> None:
    """Forget every recorded failure (the start of a fit, evaluate or predict: what an earlier run that
    stopped for another reason left must not fail this one)."""
    with _lock:
        checks = list(_recorded)
        _recorded.clear()
    for check in checks:
        if check.read() is not None:
            check.clear()


def _simulated() -> bool:
    from numba import config

    return bool(getattr(config, "ENABLE_CUDASIM", 0))
