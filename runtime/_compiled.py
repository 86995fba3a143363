"""Which runtime modules run compiled, and the guard that keeps a stale or partial build from running.

The modules in `COMPILED` (each a `.py` with a `.pxd` beside it in the source tree) are compiled by
Cython in pure-Python mode when the project is installed (setup.py), and Python then imports the
extension instead of the `.py`. They run as one set: a compiled module reads the others' classes as C
types (tracing's nodes are graph's), so either all load compiled or all load from their `.py` files,
with the same behaviour. They all run interpreted when:
- `FF_INTERPRETED=1` is in the environment (debugging, profiling the Python lines, comparing, and the
  test that the interpreted path still passes);
- one of them has no extension for this interpreter while others have (an optional extension that
  failed to compile, a copy that lost a file);
- an extension is older than the newest `.py` or `.pxd` of the set (a source edited after
  `pip install -e .`): the log says which and how to rebuild, rather than running code that is not the
  source in front of you.
With no extension at all (nothing built), Python imports the `.py` files anyway. `install()` runs when
the `runtime` package is imported, before any of these modules is.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import os
import sys
from pathlib import Path

log = logging.getLogger("runtime")

COMPILED = ("analysis", "graph", "launching", "reductions", "trace_record", "tracing", "workers")

_HERE = Path(__file__).resolve().parent
_SLACK_S = 2.0  # files a wheel install writes in one go may differ by this much


def compiled_sources() -> dict[str, Path]:
    """Module name -> its .py, for every module of `COMPILED`."""
    return {f"runtime.{stem}": _HERE / f"{stem}.py" for stem in COMPILED}


def extension_of(src: Path) -> Path | None:
    """The built extension of `src` for this interpreter, if there is one."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        ext = src.with_suffix(suffix)
        if ext.is_file():
            return ext
    return None


def _mtime(path: Path) -> float:
    return path.stat().st_mtime if path.is_file() else 0.0


def newest_source(sources) -> float:
    """The latest modification time among the .py and .pxd files of `sources`."""
    return max((max(_mtime(src), _mtime(src.with_suffix(".pxd"))) for src in sources), default=0.0)


def stale(ext: Path, newest: float) -> bool:
    """Whether `ext` was built before `newest` (the last edit of any source of the set)."""
    return newest > ext.stat().st_mtime + _SLACK_S


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
    """Send every module of the set to its .py file when they cannot all run compiled; returns module
    name -> reason (empty: they run compiled, or nothing is built)."""
    sources = compiled_sources()
    exts = {name: extension_of(src) for name, src in sources.items()}
    built = {name for name, ext in exts.items() if ext is not None}
    if not built:
        return {}
    if os.environ.get("FF_INTERPRETED", "") not in ("", "0"):
        return _route(sources, {name: "FF_INTERPRETED is set" for name in sources}, quiet=True)
    missing = sorted(set(sources) - built)
    if missing:
        why = f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not built for this Python"
        return _route(sources, {name: why for name in sources})
    newest = newest_source(sources.values())
    old = sorted(name for name, ext in exts.items() if stale(ext, newest))
    if old:
        why = f"the build of {', '.join(old)} is older than the last edit of the runtime's compiled sources"
        return _route(sources, {name: why for name in sources})
    return {}


def _route(sources: dict[str, Path], reasons: dict[str, str], quiet: bool = False) -> dict[str, str]:
    sys.meta_path.insert(0, _SourceFinder(sources))
    if not quiet:
        log.warning("running the runtime's compiled modules interpreted (slower): %s. Rebuild them with "
                    "`python -m pip install -e .` (or set FF_INTERPRETED=1 to run the sources on purpose).",
                    next(iter(reasons.values())))
    return reasons


def status() -> dict[str, bool]:
    """Module name -> whether it runs compiled (False also when it is not imported yet)."""
    out = {}
    for name in compiled_sources():
        mod = sys.modules.get(name)
        out[name] = mod is not None and not str(getattr(mod, "__file__", "")).endswith(".py")
    return out


def all_compiled() -> bool:
    """Whether every module of the set runs compiled (imports them; for logs, benchmarks, images)."""
    for name in compiled_sources():
        importlib.import_module(name)
    state = status()
    return bool(state) and all(state.values())


INTERPRETED = install()
