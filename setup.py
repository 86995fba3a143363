"""Build: the runtime's hot paths compiled by Cython, by the ordinary `pip install`.

The runtime modules with a `.pxd` beside their `.py` (`runtime._compiled.COMPILED`: analysis, graph,
launching, reductions, trace_record, tracing, workers) are compiled in Cython's pure-Python mode: the
`.py` stays the one source, the `.pxd` types its classes and locals, and the same `.py` runs interpreted
where the extensions are not built (runtime/_compiled.py decides at import time). On x86-64,
`runtime/_fpcsr.pyx` reads and writes MXCSR with SSE intrinsics (runtime.fpenv). The extensions are
optional: without a C compiler the install still succeeds, interpreted and slower. Annotations do not
type anything (`annotation_typing=False`): a `str` annotation would reject str subclasses when compiled;
types come from the `.pxd` files and `@cython.locals` only. The C files compile in parallel, one job per
core, and without debug information (`-g0`: the compiler spends a third of its time on it, and the
extensions of a release build need none). Metadata is in setup.cfg.
"""

import os
import platform
from pathlib import Path

from Cython.Build import cythonize
from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
SOURCES = [p.with_suffix(".py").relative_to(ROOT).as_posix() for p in sorted((ROOT / "runtime").glob("*.pxd"))
           if p.with_suffix(".py").is_file()]
if platform.machine().lower() in ("x86_64", "amd64") and (ROOT / "runtime/_fpcsr.pyx").is_file():
    SOURCES.append("runtime/_fpcsr.pyx")

DIRECTIVES = {"embedsignature": True, "annotation_typing": False}
extensions = cythonize(SOURCES, language_level=3, compiler_directives=DIRECTIVES)
for ext in extensions:
    ext.optional = True  # a failed compile leaves that module interpreted, not the install broken
    if os.name == "posix":
        ext.extra_compile_args.append("-g0")  # after Python's own CFLAGS (-g), so it wins


class ParallelBuildExt(build_ext):
    """build_ext with one compile job per core unless `-j` / `--parallel` says otherwise."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1


setup(ext_modules=extensions, cmdclass={"build_ext": ParallelBuildExt})
