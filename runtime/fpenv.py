"""The floating-point environment of the processors' threads: denormal numbers flushed to zero.

x86 CPUs handle a denormal operand or result (|x| < 1.2e-38 in float32) in microcode, 20 to 100 times
slower than a normal one. Training makes them: Adam's first moment of a weight whose gradient stays
zero decays by beta_1 = 0.9 per step and is denormal after about 800 steps, and from then on every
update of such a weight runs at microcode speed (the MNIST CNN's 1.2M-element dense update went from
1.1 ms to 15.6 ms a step, 70% into the first epoch). TensorFlow and PyTorch's CPU thread pools set the
same two MXCSR bits for the same reason: FTZ (results that would be denormal are 0) and DAZ (denormal
operands are read as 0). The setting is per thread; `flush_denormals` sets it on the calling thread and
returns the previous control word for `restore`.

Where the CPU is not x86-64 (aarch64 has its own FZ bit, not reachable from here) `supported()` is
False and both calls do nothing. On x86-64 the compiled `runtime._fpcsr` (SSE intrinsics, built by
`pip install`) serves both calls when it is built; otherwise Numba functions do (`runtime._mxcsr`).
"""

from __future__ import annotations

import logging
import platform

log = logging.getLogger(__name__)

_FTZ = 0x8000  # MXCSR bit 15: flush denormal results to zero
_DAZ = 0x0040  # MXCSR bit 6: treat denormal operands as zero
_X86 = platform.machine().lower() in ("x86_64", "amd64")
_impl: dict = {}


def supported() -> bool:
    """Whether this CPU's denormal handling can be set from here (x86-64)."""
    return _X86


def _build() -> dict:
    """The Numba functions reading and writing MXCSR (`runtime._mxcsr`, imported on first use: importing
    this module does not load Numba)."""
    if not _impl:
        from runtime import _mxcsr

        _impl.update(get=_mxcsr.get_word, set=_mxcsr.set_word)
    return _impl


def control_word() -> int | None:
    """The calling thread's MXCSR, or None where unsupported."""
    return int(_build()["get"]()) if _X86 else None


def flush_denormals() -> int | None:
    """Set FTZ and DAZ on the calling thread; returns the previous control word (None: unsupported)."""
    if not _X86:
        return None
    impl = _build()
    old = int(impl["get"]())
    if old & (_FTZ | _DAZ) != (_FTZ | _DAZ):
        impl["set"](old | _FTZ | _DAZ)
    return old


def restore(word: int | None) -> None:
    """Put back a control word returned by `flush_denormals` (None: nothing to do)."""
    if word is not None and _X86:
        impl = _build()
        if int(impl["get"]()) != word:
            impl["set"](word)


def flushes(word: int | None) -> bool:
    """Whether a control word has both FTZ and DAZ set."""
    return word is not None and word & (_FTZ | _DAZ) == (_FTZ | _DAZ)


if _X86:
    try:
        from runtime import _fpcsr
    except ImportError:  # a source tree without the built extension: the Numba functions above serve
        _fpcsr = None
    if _fpcsr is not None:
        _impl.update(get=_fpcsr.get_word, set=_fpcsr.set_word)
        flush_denormals = _fpcsr.flush_denormals  # noqa: F811 - the same contract, in C
        restore = _fpcsr.restore  # noqa: F811
