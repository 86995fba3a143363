"""Every CUDA kernel compiled to PTX for real GPU architectures, for each signature it is launched with.

The signatures come from kernels/gpu/launch_signatures.json, which the simulator tests' launches keep up
to date (kernels/gpu/signatures.py), plus the float32 twin of each all-float64 signature (the simulator
tests often run in float64, training in float32). Each compile fails the test on a compile error, on float64
instructions in a float32 kernel (``add.f64``, ``cvt.f32.f64``, a float64 parameter ...; a float32 kernel
is one whose floating-point arrays are all float32), on a local-memory stack frame in the PTX (``.local``;
libdevice's sin/cos slow path for huge arguments is the one exception), and, when ptxas is installed (numba-cuda[cu12] brings it),
on register spills it reports (``-v``: spill stores / loads). sm_90 always; sm_80 too with
``FF_PTX_ALL_ARCHS=1`` (it doubles the time). No GPU is needed: NVVM compiles for any architecture.
Compiled PTX is cached in pytest's cache folder, keyed by the kernel sources and the toolchain.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kernels.gpu import signatures

ROOT = Path(__file__).resolve().parents[2]
ARCHS = [(9, 0)] + ([(8, 0)] if os.environ.get("FF_PTX_ALL_ARCHS") == "1" else [])
F64_INSTRUCTION = re.compile(r"^\s*(?:@%p\d+\s+)?[a-z][\w.]*\.f64\b", re.MULTILINE)
SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def _nvvm_reason() -> str:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "the CUDA simulator is on in this process (compile_ptx needs the real numba.cuda)"
    try:
        from numba.cuda.cudadrv.nvvm import NVVM

        NVVM()
    except Exception as e:  # noqa: BLE001 - any failure to load libNVVM means it is not installed
        return f"libNVVM is not available ({type(e).__name__}: {e}); install numba-cuda[cu12] (test extra)"
    return ""


pytestmark = pytest.mark.skipif(bool(_nvvm_reason()), reason=_nvvm_reason() or "NVVM available")


def _ptxas() -> str | None:
    local = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = list(local.glob("site-packages/nvidia/cuda_nvcc/bin/ptxas"))
    return str(candidates[0]) if candidates else shutil.which("ptxas")


def _sources_digest() -> str:
    h = hashlib.sha256()
    for p in sorted([*(ROOT / "kernels").rglob("*.py"), ROOT / "runtime" / "gpu_kernels.py"]):
        h.update(p.read_bytes())
    import numba_cuda

    h.update(getattr(numba_cuda, "__version__", "?").encode())
    return h.hexdigest()[:16]


class _CompileOnlyDevice:
    # Device functions ask the current device for its compute capability when a kernel calling them is
    # typed; with no GPU here, answer for the architecture being compiled (their IR is linked into the
    # kernel's, which compile_ptx builds for the requested cc).
    compute_capability = (9, 0)


@pytest.fixture(scope="module")
def kernels():
    from numba.cuda import dispatcher

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dispatcher, "get_current_device", _CompileOnlyDevice)
        yield dict(signatures.iter_kernels())


@pytest.fixture(scope="module")
def ptx_cache(request):
    cache = getattr(request.config, "cache", None)
    if cache is None:  # -p no:cacheprovider
        folder = Path(tempfile.mkdtemp(prefix="ff_ptx_"))
        yield folder
        shutil.rmtree(folder, ignore_errors=True)
        return
    yield Path(cache.mkdir(f"ptx-{_sources_digest()}"))


# libdevice's sinf/cosf reduce huge arguments (Payne-Hanek) with one int64 -> f64 multiply by this constant
# and a small local table; that slow path is the library's, taken only for |x| > ~1e5.
LIBDEVICE_TRIG_CONSTANT = "0d3BF921FB54442D19"


def _is_float32_kernel(sig: tuple[str, ...]) -> bool:
    floats = [t for t in sig if t.startswith("float")]
    return any(t.startswith("float32[") for t in floats) and not any(t.startswith("float64[") for t in floats)


def _f64_instructions(ptx: str) -> list[str]:
    lines = ptx.splitlines()
    skip = set()
    for i, line in enumerate(lines):
        if LIBDEVICE_TRIG_CONSTANT in line and "mul.f64" in line:
            skip.update(j for j in (i - 1, i, i + 1) if "cvt" in lines[j] or j == i)
    return sorted({m.group(0).strip().split()[-1] for i, line in enumerate(lines) if i not in skip
                   for m in [F64_INSTRUCTION.match(line)] if m})


FUNCTION = re.compile(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)")


def _local_memory(ptx: str) -> bool:
    """A .local declaration outside libdevice's trig slow path (its own __internal_* function for f64,
    inlined with the constant above for f32)."""
    function = ""
    for line in ptx.splitlines():
        m = FUNCTION.search(line)
        if m:
            function = m.group(1)
        elif ".local" in line and not function.startswith("__internal_") and LIBDEVICE_TRIG_CONSTANT not in ptx:
            return True
    return False


def _compile(kernel, sig, cc, cache: Path) -> str:
    from numba import cuda

    key = hashlib.sha256(repr((signatures.python_function(kernel).__qualname__, sig, cc)).encode()).hexdigest()
    path = cache / f"{key[:24]}.ptx"
    if path.exists():
        return path.read_text()
    argtypes = tuple(signatures.parse_type(s) for s in sig)
    opts = kernel.targetoptions
    ptx, _ = cuda.compile_ptx(signatures.python_function(kernel), argtypes, cc=cc,
                              fastmath=opts.get("fastmath", False), lineinfo=False)
    path.write_text(ptx)
    return ptx


def _ptxas_spills(ptx: str, cc, cache: Path | None = None) -> list[str]:
    ptxas = _ptxas()
    if ptxas is None:
        return []
    if cache is not None:
        path = cache / f"{hashlib.sha256((ptx + repr(cc)).encode()).hexdigest()[:24]}.spills"
        if not path.exists():
            path.write_text("\n".join(_ptxas_spills(ptx, cc)))
        return [line for line in path.read_text().splitlines() if line]
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        proc = subprocess.run([ptxas, f"-arch=sm_{cc[0]}{cc[1]}", "-v", str(src), "-o", str(Path(d) / "k.o")],
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"ptxas failed:\n{proc.stderr[-3000:]}"
    return [m.group(0) for m in SPILLS.finditer(proc.stderr) if m.group(1) != "0" or m.group(2) != "0"]


def test_every_cuda_module_is_in_the_registry():
    listed = set(signatures.KERNEL_MODULES)
    found = set()
    for base in ("kernels", "runtime"):
        for p in (ROOT / base).rglob("*.py"):
            if re.search(r"^\s*@cuda\.jit", p.read_text(), re.MULTILINE):
                found.add(".".join(p.relative_to(ROOT).with_suffix("").parts))
    assert found <= listed, f"modules with CUDA kernels missing from KERNEL_MODULES: {sorted(found - listed)}"


def test_every_kernel_is_launched_by_a_simulator_test(kernels):
    sigs = signatures.load_signatures()
    unknown = sorted(set(sigs) - set(kernels))
    assert not unknown, f"launch_signatures.json names kernels that no longer exist: {unknown}"
    never = sorted(set(kernels) - set(sigs))
    assert not never, (f"kernels no simulator test launches (so no signature to compile): {never}; "
                       "add a test under tests/kernels/cuda and rerun it with FF_UPDATE_CUDA_SIGNATURES=1")


@pytest.mark.parametrize("cc", ARCHS, ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
@pytest.mark.parametrize("name", sorted(signatures.compile_signatures()))
def test_kernel_compiles_to_clean_ptx(name, cc, kernels, ptx_cache):
    kernel = kernels.get(name)
    assert kernel is not None, f"{name} is in launch_signatures.json but not found by iter_kernels"
    problems = []
    for sig in signatures.compile_signatures()[name]:
        try:
            ptx = _compile(kernel, sig, cc, ptx_cache)
        except Exception as e:  # noqa: BLE001 - report every failing signature, not the first
            problems.append(f"{sig}: compile error {type(e).__name__}: {str(e)[:400]}")
            continue
        if _is_float32_kernel(sig):
            f64 = _f64_instructions(ptx)
            if f64:
                problems.append(f"{sig}: float64 instructions in a float32 kernel: {f64[:8]}")
        if _local_memory(ptx):
            problems.append(f"{sig}: local memory in the PTX (a stack frame)")
        spills = _ptxas_spills(ptx, cc, ptx_cache)
        if spills:
            problems.append(f"{sig}: ptxas reports {spills}")
    assert not problems, f"{name} for sm_{cc[0]}{cc[1]}:\n" + "\n".join(problems)
