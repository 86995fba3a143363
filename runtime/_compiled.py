"""Which runtime modules run compiled, and the guard that keeps a stale build from shadowing its source.

A module with a `.pxd` beside its `.py` (graph, trace_record, tracing, workers) is compiled by Cython in
pure-Python mode when the project is installed (setup.py compiles exactly those), and Python then imports
the extension instead of the `.py`. Two cases run the `.py` interpreted instead, with the same behaviour:
- `FF_INTERPRETED=1` in the environment (debugging, profiling the Python lines, and the test that the
  interpreted path still passes);
- a built extension older than its `.py` or `.pxd` (a source edited after `pip install -e .`): the log
  says which and how to rebuild, rather than running code that is not the source in front of you. Then
  all of them run interpreted (a compiled module reads the others' classes as C types).
`install()` runs when the `runtime` package is imported, before any of these modules is.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import os
import sys
from pathlib import Path

log = logging.getLogger("runtime")

_HERE = Path(__file__).resolve().parent
_SLACK_S = 2.0  # files a wheel install writes in one go may differ by this much


def compiled_sources() -> dict[str, Path]:
    """Module name -> its .py, for every runtime module with a .pxd beside it."""
    return {f"runtime.{p.stem}": p.with_suffix(".py") for p in sorted(_HERE.glob("*.pxd"))
            if p.with_suffix(".py").is_file()}


def extension_of(src: Path) -> Path | None:
    """The built extension of `src` for this interpreter, if there is one."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        ext = src.with_suffix(suffix)
        if ext.is_file():
            return ext
    return None


def stale(src: Path, ext: Path) -> bool:
    """Whether `ext` was built before the last edit of `src` or its .pxd."""
    built = ext.stat().st_mtime
    pxd = src.with_suffix(".pxd")
    newest = max(src.stat().st_mtime, pxd.stat().st_mtime if pxd.is_file() else 0.0)
    return newest > built + _SLACK_S


class _SourceFinder:
    """A meta-path finder that loads the listed modules from their .py files."""

    def __init__(self, sources: dict[str, Path]):
        self.sources = sources

    def find_spec(self, fullname, path=None, target=None):
        src = self.sources.get(fullname)
        if src is None:
            return None
        return importlib.util.spec_from_file_location(fullname, src)


def install() -> dict[str, str]:
    """Route the compiled modules to their .py files when one must run interpreted; returns name ->
    reason. All or none: a compiled module reads the classes of the others as C types (tracing's nodes
    are graph's), so a stale one takes the rest with it."""
    forced = os.environ.get("FF_INTERPRETED", "") not in ("", "0")
    built = {name: (src, extension_of(src)) for name, src in compiled_sources().items()}
    built = {name: (src, ext) for name, (src, ext) in built.items() if ext is not None}
    if forced:
        reasons = {name: "FF_INTERPRETED is set" for name in built}
    else:
        reasons = {name: f"{ext.name} is older than {src.name}" for name, (src, ext) in built.items()
                   if stale(src, ext)}
    if not reasons:
        return {}
    sys.meta_path.insert(0, _SourceFinder({name: src for name, (src, _) in built.items()}))
    if not forced:
        log.warning("running the runtime's compiled modules (%s) interpreted: %s. Rebuild them with "
                    "`python -m pip install -e .` (or set FF_INTERPRETED=1 to run the sources on purpose).",
                    ", ".join(sorted(built)), "; ".join(reasons.values()))
    return {name: reasons.get(name, "another compiled module runs interpreted") for name in built}


def status() -> dict[str, bool]:
    """Module name -> whether it runs compiled (for logs and benchmarks)."""
    out = {}
    for name in compiled_sources():
        mod = sys.modules.get(name)
        out[name] = mod is not None and not str(getattr(mod, "__file__", "")).endswith(".py")
    return out


INTERPRETED = install()
