"""Values made once per device array and kept on it: views, kernel parameters, placeholders, CuPy views.

A Numba device array's shape and memory never change, and the runtime hands a task the same arrays (its
instances' cached views) at every step, so what is derived from one can be kept on the array itself, in
its ``__dict__``: it lives exactly as long as the array. Making it again cost 10-90 us of host time per
use in numba-cuda 0.30 (a slice or reshape walks a dummy array and checks the context). Arrays without a
``__dict__`` (NumPy, CuPy) get a fresh value each time.
"""

from __future__ import annotations


def per_array(a, key, make):
    """`make()`, made once per array `a` and hashable `key` and kept on `a` (made every time for an array
    that cannot carry it)."""
    d = getattr(a, "__dict__", None)
    if d is None:
        return make()
    cache = d.get("_ff_memo")
    if cache is None:
        cache = d["_ff_memo"] = {}
    v = cache.get(key)
    if v is None:
        v = cache[key] = make()
    return v
