# cython: language_level=3
"""The calling thread's x86 MXCSR through the compiler's SSE intrinsics: a few nanoseconds a call, where
the Numba functions of `runtime._mxcsr` cost a dispatch each. Built on x86-64 only; `runtime.fpenv`
uses it when present (the sequential executor sets and restores the word around every node it runs)."""

cdef extern from "xmmintrin.h" nogil:
    unsigned int _mm_getcsr()
    void _mm_setcsr(unsigned int)

cdef unsigned int _FTZ_DAZ = 0x8000 | 0x0040


def get_word():
    """The calling thread's MXCSR."""
    return _mm_getcsr()


def set_word(unsigned int value):
    """Load `value` into the calling thread's MXCSR."""
    _mm_setcsr(value)


def flush_denormals():
    """Set FTZ and DAZ on the calling thread; returns the previous control word."""
    cdef unsigned int old = _mm_getcsr()
    if old & _FTZ_DAZ != _FTZ_DAZ:
        _mm_setcsr(old | _FTZ_DAZ)
    return old


def restore(word):
    """Put back a control word returned by `flush_denormals` (None: nothing to do)."""
    cdef unsigned int w
    if word is not None:
        w = word
        if _mm_getcsr() != w:
            _mm_setcsr(w)
