"""The registry of every CUDA kernel and the argument types it is launched with.

`iter_kernels()` finds each kernel: module-level ``@cuda.jit`` kernels of `KERNEL_MODULES`, plus the
kernels a module builds in a factory, which it lists in a ``cuda_kernels()`` function of its own. A
kernel's name is ``module:qualname`` (``module:key`` for factory kernels). `launch_signatures.json`, next
to this file, maps each name to the argument types it is launched with, as Numba type strings
(``float32[:, ::1]``, ``int64``, ``UniTuple(int64, 3)``).

The file is written from real launches, never by hand: the simulator tests run with a recorder
(`install_recorder`) that types every kernel launch as the CUDA dispatcher would, and their driver
checks that each recorded signature is in the file (`missing_signatures`); with
``FF_UPDATE_CUDA_SIGNATURES=1`` the driver adds them instead (`merge_signatures`). After changing a
kernel's arguments, rebuild the file from scratch so stale signatures go:

    rm kernels/gpu/launch_signatures.json
    FF_UPDATE_CUDA_SIGNATURES=1 python -m pytest tests/kernels/test_kernels_cuda_sim.py \\
        tests/runtime/test_runtime_gpu_sim.py tests/kernels/test_conv2d_cuda.py \\
        tests/kernels/test_pool2d_cuda.py tests/kernels/test_optimizers_cuda.py \\
        tests/kernels/test_optimizers_more_cuda.py tests/kernels/test_sparse_moments_cuda.py \\
        tests/flexflow_keras/ops/test_ops_cuda_sim.py

The PTX test (tests/kernels/test_cuda_ptx.py) compiles every kernel for every recorded signature (and
the float32 twin of each all-float64 one).
"""

from __future__ import annotations

import atexit
import importlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path

SIGNATURE_FILE = Path(__file__).with_name("launch_signatures.json")

# Every module holding CUDA kernels. The PTX test fails on a module with ``cuda.jit`` not listed here.
KERNEL_MODULES = (
    "kernels._conv_cuda",
    "kernels._conv_pool_cuda",
    "kernels.gpu.activations",
    "kernels.gpu.array_ops",
    "kernels.gpu.array_select",
    "kernels.gpu.augment",
    "kernels.gpu.batchnorm",
    "kernels.gpu.channel_ops",
    "kernels.gpu.checks",
    "kernels.gpu.conv1d",
    "kernels.gpu.ctc",
    "kernels.gpu.conv2d_dilated",
    "kernels.gpu.conv3d",
    "kernels.gpu.conv_lstm",
    "kernels.gpu.depthwise_conv2d",
    "kernels.gpu.dropout",
    "kernels.gpu.elementwise",
    "kernels.gpu.embedding",
    "kernels.gpu.encoding",
    "kernels.gpu.gemm",
    "kernels.gpu.gru_reset_before",
    "kernels.gpu.layernorm",
    "kernels.gpu.linear",
    "kernels.gpu.losses",
    "kernels.gpu.masked_rows",
    "kernels.gpu.noise",
    "kernels.gpu.recurrent",
    "kernels.gpu.reduce",
    "kernels.gpu.rows",
    "kernels.gpu.segment",
    "kernels.gpu.shape",
    "kernels.gpu.softmax",
    "kernels.gpu.space_depth",
    "kernels.gpu.spatial",
    "kernels.optimizers",
    "kernels.optimizers_more",
    "kernels.optimizers_norms",
    "runtime.gpu_kernels",
)


def _is_kernel(obj) -> bool:
    # a real CUDADispatcher or a simulator FakeCUDAKernel, for a kernel (not a device function)
    if type(obj).__name__ == "CUDADispatcher":
        return not obj.targetoptions.get("device", False)
    return type(obj).__name__ == "FakeCUDAKernel" and not getattr(obj, "_device", True)


def python_function(kernel):
    """The Python function a kernel dispatcher (real or simulated) wraps."""
    return getattr(kernel, "py_func", None) or kernel.fn


def iter_kernels() -> Iterator[tuple[str, object]]:
    """(name, dispatcher) for every CUDA kernel of `KERNEL_MODULES`."""
    for mod_name in KERNEL_MODULES:
        mod = importlib.import_module(mod_name)
        for _name, obj in sorted(vars(mod).items()):
            if _is_kernel(obj) and python_function(obj).__module__ == mod_name:
                yield f"{mod_name}:{python_function(obj).__qualname__}", obj
        factory = getattr(mod, "cuda_kernels", None)
        if factory is not None:
            for key, obj in sorted(factory().items()):
                yield f"{mod_name}:{key}", obj


def type_string(t) -> str:
    """A Numba type as a string `parse_type` reads back (arrays in slice notation)."""
    from numba.core import types

    if isinstance(t, types.Array):
        dims = [":"] * t.ndim
        if t.layout == "C" and t.ndim:
            dims[-1] = "::1"
        elif t.layout == "F" and t.ndim:
            dims[0] = "::1"
        return f"{t.dtype}[{', '.join(dims)}]"
    if isinstance(t, types.UniTuple):
        return f"UniTuple({type_string(t.dtype)}, {t.count})"
    if isinstance(t, types.BaseTuple):
        inner = ", ".join(type_string(x) for x in t.types)
        return f"Tuple(({inner}{',' if len(t.types) == 1 else ''}))"
    if isinstance(t, types.Boolean):
        return "boolean"
    return str(t)


def parse_type(text: str):
    """The Numba type of a `type_string`."""
    from numba.core import types

    return eval(text, {"__builtins__": {}}, dict(vars(types)))  # noqa: S307 - our own registry strings


def launch_types(args) -> tuple[str, ...]:
    """The type strings the CUDA dispatcher gives a launch's arguments (simulator arrays typed by the
    host array they wrap)."""
    from numba import typeof

    out = []
    for a in args:
        host = getattr(a, "_ary", None)  # simulator device arrays wrap a NumPy array
        if host is None and type(a).__name__ == "FakeWithinKernelCUDAArray":
            host = a._item._ary
        out.append(type_string(typeof(host if host is not None else a)))
    return tuple(out)


def float32_twin(sig: tuple[str, ...]) -> tuple[str, ...] | None:
    """The float32 version of a signature whose floating-point arrays are all float64 (the simulator tests
    often run in float64; training runs in float32, with Python floats typed float32 by
    kernels.gpu.launch.typed_scalars), or None for a signature with no float64 array or mixed ones."""
    arrays = [t for t in sig if "[" in t and t.split("[")[0].startswith("float")]
    if not arrays or any(not t.startswith("float64[") for t in arrays):
        return None
    return tuple(t.replace("float64", "float32") if t.startswith("float64") else t for t in sig)


def compile_signatures(path: Path = SIGNATURE_FILE) -> dict[str, list[tuple[str, ...]]]:
    """name -> the recorded signatures plus their float32 twins: what the PTX test compiles."""
    out = {}
    for name, sigs in load_signatures(path).items():
        # a kernel built for float64 (``name[float64]``) has a float32 sibling of its own
        twins = [] if name.endswith("[float64]") else [t for t in map(float32_twin, sigs) if t is not None]
        out[name] = sorted(set(sigs) | set(twins))
    return out


def load_signatures(path: Path = SIGNATURE_FILE) -> dict[str, list[tuple[str, ...]]]:
    """name -> list of argument type tuples, from the registry file."""
    if not path.exists():
        return {}
    raw = json.loads(path.read_text())
    return {name: [tuple(s) for s in sigs] for name, sigs in raw.items()}


def save_signatures(sigs: dict[str, list[tuple[str, ...]]], path: Path = SIGNATURE_FILE) -> None:
    """Write the registry file (sorted, one signature per line, so diffs stay readable)."""
    lines = ["{"]
    names = sorted(sigs)
    for n, name in enumerate(names):
        lines.append(f"  {json.dumps(name)}: [")
        rows = sorted(set(sigs[name]))
        for i, sig in enumerate(rows):
            lines.append(f"    {json.dumps(list(sig))}{',' if i < len(rows) - 1 else ''}")
        lines.append(f"  ]{',' if n < len(names) - 1 else ''}")
    lines.append("}")
    path.write_text("\n".join(lines) + "\n")


def _ours(name: str) -> bool:
    # a kernel of the framework (known, or unknown but in our packages); tests' own kernels are not
    return not name.startswith("?") or name[1:].startswith(("kernels.", "runtime."))


def read_log(log: Path) -> set[tuple[str, tuple[str, ...]]]:
    """The (name, signature) pairs a recorder wrote (one JSON line each), tests' own kernels left out."""
    if not log.exists():
        return set()
    recs = (json.loads(line) for line in log.read_text().splitlines() if line)
    return {(rec[0], tuple(rec[1])) for rec in recs if _ours(rec[0])}


def missing_signatures(log: Path, path: Path = SIGNATURE_FILE) -> list[tuple[str, tuple[str, ...]]]:
    """The recorded launches whose signature the registry file lacks."""
    known = load_signatures(path)
    return sorted((n, s) for n, s in read_log(log) if s not in known.get(n, ()))


def merge_signatures(log: Path, path: Path = SIGNATURE_FILE) -> int:
    """Add the recorded launches' signatures to the registry file; returns how many were new."""
    sigs = load_signatures(path)
    new = 0
    for name, sig in read_log(log):
        if sig not in sigs.setdefault(name, []):
            sigs[name].append(sig)
            new += 1
    save_signatures(sigs, path)
    return new


def install_recorder(log: Path) -> None:
    """Record the name and argument types of every simulated kernel launch into `log` (JSON lines).

    Only under NUMBA_ENABLE_CUDASIM=1; a launch of a kernel `iter_kernels` does not know is recorded
    under ``?module:qualname`` so the driver's check names it.
    """
    from numba.cuda.simulator import kernel as sim

    names = {id(python_function(k)): name for name, k in iter_kernels()}
    seen: set[tuple[str, tuple[str, ...]]] = set()
    lock = threading.Lock()
    original = sim.FakeCUDAKernel.__call__

    def recording_call(self, *args):
        if not self._device and not sim._kernel_context:
            fn = self.fn
            name = names.get(id(fn)) or f"?{fn.__module__}:{fn.__qualname__}"
            if name.startswith("?"):  # a factory kernel built after the recorder was installed
                names.update({id(python_function(k)): n for n, k in iter_kernels()})
                name = names.get(id(fn), name)
            with lock:
                seen.add((name, launch_types(args)))
        return original(self, *args)

    def flush():
        with open(log, "a") as f:
            for name, sig in sorted(seen):
                f.write(json.dumps([name, list(sig)]) + "\n")

    sim.FakeCUDAKernel.__call__ = recording_call
    atexit.register(flush)
