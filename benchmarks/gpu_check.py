"""The one-command GPU check of issue 11 (at most ~8 minutes on one GPU):

    python benchmarks/gpu_check.py [--budget 480] [--out DIR]

0. the machine: the device's name, the driver, the versions of numba-cuda, CuPy and NumPy, and whether
   the runtime's modules run compiled (Cython) or interpreted;
1. every CUDA kernel and op test on the device (tests/kernels/cuda and tests/flexflow_keras/ops/cuda with
   NUMBA_ENABLE_CUDASIM=0, the scripted conv / pool / optimizer checks with FF_CUDA_DEVICE=1), spread over
   pytest-xdist workers when it is installed (the PTX compile test needs no GPU: CI runs it for sm_90,
   FF_PTX_ALL_ARCHS=1 adds sm_80);
2. sgemm 4096^3: our path (kernels.gpu.linear.gemm_cuda: cuBLAS through CuPy when installed), the Numba
   GEMM alone, and cuBLAS called directly (CuPy), timed with CUDA events;
3. MNIST MLP and CNN training with -ll:gpu 1: the first epoch's loss against our CPU run's (the same
   seed and batches; within 1e-4), samples/s against our CPU run, tf.keras on the same GPU (only when
   TensorFlow is installed and sees a GPU) and, as context only, the same model in PyTorch eager; the
   MLP again with every launch through numba-cuda's dispatch (FF_DIRECT_LAUNCH=0), for comparison;
4. the host cost of each piece of a GPU task's path alone (a Numba launch, our launch helper with and
   without direct launches, a device context push, a pooled and a new event), and the host time per
   traced GPU task on both executors;
5. a table printed last: measured value, target, verdict. A figure that was not measured says why; none
   is ever estimated. Without a usable GPU the script refuses and measures nothing (exit status 2).

With --out DIR, the full pytest output, the training runs' output (a run stopped at its time limit dumps
its threads' stacks first), cProfiles of a traced GPU loop and of 100 GPU training steps (sequential
executor: every task on one thread) and the table (JSON) are written there. `--only` picks steps
(machine, sgemm, host, traced, kernels, training); `--no-peers` skips tf.keras and PyTorch.

numba-cuda 0.30 compiles nothing beside NumPy 2.5 (a clear error at start-up says so): on such a machine,
put a NumPy 2.4 wheel first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("FF_LOG_LEVEL", "WARNING")

STEP_NAMES = ("machine", "sgemm", "host", "traced", "kernels", "training")
ROWS: list[tuple[str, str, str, str]] = []  # (check, measured, target, verdict)
cuda = None  # numba.cuda, imported by the steps that need it


def row(check: str, measured: str, target: str = "", verdict: str = "") -> None:
    ROWS.append((check, measured, target, verdict))


def refuse_without_gpu() -> None:
    """Exit with status 2, measuring nothing, when no real CUDA device is usable."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        print("gpu_check: NUMBA_ENABLE_CUDASIM is set; this check needs a real GPU. Nothing was measured.",
              file=sys.stderr)
        sys.exit(2)
    from runtime.gpu import device_count

    n, why = device_count()
    if n == 0:
        print(f"gpu_check: no usable CUDA GPU: {why}. Nothing was measured; no figure is reported.",
              file=sys.stderr)
        sys.exit(2)


def _env(**kw) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **kw)
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    return env


OUT_DIR: str | None = None  # --out: where the full logs go
TIMED_STEPS = 600  # batches of data a training run times over
DEADLINE = float("inf")  # perf_counter() by which the check ends (--budget)
PEERS = True  # --no-peers: no tf.keras / PyTorch runs


def _save(name: str, text: str, append: bool = False) -> None:
    if OUT_DIR:
        with open(os.path.join(OUT_DIR, name), "a" if append else "w") as f:
            f.write(text)


def machine_rows() -> None:
    """What the figures below were measured on."""
    import numpy as np
    from numba import cuda

    from runtime.gpu import device_info

    info = device_info(0)
    cc = cuda.get_current_device().compute_capability
    row("device", f"{info['name']} (sm_{cc[0]}{cc[1]}), {info['total'] / 2**30:.0f} GiB, "
                  f"{info['bandwidth'] / 1e12:.1f} TB/s nominal")
    versions = [f"numpy {np.__version__}"]
    for mod in ("numba", "numba_cuda", "cupy"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            versions.append(f"{mod} not installed")
    try:
        versions.append(f"driver {'.'.join(map(str, cuda.cudadrv.driver.driver.get_version()))}")
    except Exception as e:  # noqa: BLE001 - the version is context only
        versions.append(f"driver version unread ({type(e).__name__})")
    row("software", ", ".join(versions))
    from runtime import _compiled

    # the host-time rows below depend on it: a source tree on PYTHONPATH runs interpreted unless built
    # there (`python setup.py build_ext --inplace`, which needs Cython and a C compiler)
    row("runtime modules", "compiled (Cython)" if _compiled.all_compiled() else
        f"interpreted: {next(iter(_compiled.INTERPRETED.values()), 'not built for this Python')}")


def _workers() -> list[str]:
    try:
        import xdist  # noqa: F401
    except ImportError:
        return []
    return ["-n", str(max(1, min(12, (os.cpu_count() or 2) - 4)))]


def _timeout_flag(seconds: int) -> list[str]:
    try:
        import pytest_timeout  # noqa: F401
    except ImportError:
        return []
    return [f"--timeout={seconds}"]


def run_kernel_tests(timeout: float) -> None:
    targets = ["tests/kernels/cuda", "tests/flexflow_keras/ops/cuda", "tests/kernels/test_conv2d_cuda.py",
               "tests/kernels/test_pool2d_cuda.py", "tests/kernels/test_optimizers_cuda.py",
               "tests/kernels/test_optimizers_more_cuda.py"]
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "pytest", "-v", "-rfE", "--tb=short", "-p", "no:cacheprovider",
           *_workers(), *_timeout_flag(int(timeout / 2)), *targets]
    log = os.path.join(OUT_DIR, "kernel_tests.log") if OUT_DIR else os.devnull
    with open(log, "w") as f:  # written as the tests run: a timeout still leaves what passed and failed
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=_env(FF_CUDA_DEVICE="1"), stdout=f, stderr=subprocess.STDOUT,
                                  timeout=timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    text = open(log).read() if OUT_DIR else ""
    counts = {w: text.count(f" {w.upper()} ") for w in ("passed", "failed", "error", "skipped")}
    summary = ", ".join(f"{n} {w}" for w, n in counts.items() if n)
    if code is None:
        row("kernel and op tests on the device", f"timed out after {timeout:.0f} s ({summary or 'no results'})",
            "all pass", "FAIL")
        return
    last = (text.strip().splitlines() or ["no output"])[-1]
    print("\n".join(ln for ln in text.splitlines() if ln.startswith(("FAILED", "ERROR")))[-4000:])
    row("kernel and op tests on the device", f"{last.strip('= ')} ({time.perf_counter() - t0:.0f} s)",
        "all pass", "ok" if code == 0 else "FAIL")


def _time_gpu(fn, reps: int) -> float:
    """Seconds per call of `fn` (device work), by CUDA events around `reps` calls after a warm-up."""
    from numba import cuda

    fn()
    cuda.synchronize()
    start, stop = cuda.event(), cuda.event()
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / 1e3 / reps


def run_sgemm(n: int = 4096, reps: int = 10) -> None:
    import numpy as np
    from numba import cuda

    from kernels.gpu import blas
    from kernels.gpu.gemm import SINGLE_PAIR, as3, gemm3_numba
    from kernels.gpu.linear import gemm_cuda

    rng = np.random.default_rng(0)
    a = cuda.to_device(rng.standard_normal((n, n), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((n, n), dtype=np.float32))
    c = cuda.device_array((n, n), np.float32)
    flops = 2.0 * n ** 3
    backend, why = blas.backend()
    ours = _time_gpu(lambda: gemm_cuda(a, b, c), reps)
    row(f"sgemm {n}^3, our path ({backend})", f"{flops / ours / 1e12:.2f} TFLOP/s")
    numba_s = _time_gpu(lambda: gemm3_numba(as3(a), as3(b), as3(c), SINGLE_PAIR, False, False, False), 3)
    row(f"sgemm {n}^3, Numba GEMM (fallback)", f"{flops / numba_s / 1e12:.2f} TFLOP/s")
    try:
        import cupy
    except ImportError:
        row(f"sgemm {n}^3, cuBLAS direct", f"not measured: CuPy not installed ({why})", ">= 90% (ours/cuBLAS)")
        return
    ca, cb, cc = cupy.asarray(a), cupy.asarray(b), cupy.asarray(c)
    direct = _time_gpu(lambda: cupy.matmul(ca, cb, out=cc), reps)
    ratio = direct / ours
    row(f"sgemm {n}^3, cuBLAS direct", f"{flops / direct / 1e12:.2f} TFLOP/s")
    row("sgemm ours / cuBLAS", f"{ratio:.0%}", ">= 90%", "ok" if ratio >= 0.9 else "below target")


def _torch_samples_per_s(model: str, batch: int, steps: int = 200) -> dict:
    """The same model, optimizer and batch in PyTorch eager on the GPU (context: TensorFlow is the
    issue's peer; PyTorch is what GPU machines here have)."""
    import numpy as np
    import torch

    if not torch.cuda.is_available():
        return {"skip": "PyTorch sees no GPU"}
    nn = torch.nn
    torch.manual_seed(0)
    if model == "mlp":
        net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        x = torch.rand(batch, 784, device="cuda")
    else:
        net = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Linear(128, 10))
        x = torch.rand(batch, 1, 28, 28, device="cuda")
    net = net.cuda()
    y = torch.from_numpy(np.random.default_rng(0).integers(0, 10, batch)).cuda()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(steps):
        loss = step()
        if i % 10 == 9:
            loss.item()  # a progress read every 10 steps, as a Keras progress bar does
    torch.cuda.synchronize()
    return {"samples_per_s": batch * steps / (time.perf_counter() - t0)}


def _train_child(framework: str, model: str, batch: int, gpus: int) -> None:
    """In a child process: one model's first-epoch loss (a fixed seed, unshuffled batches: the parity
    figure) and steady-state training samples/s, printed as JSON."""
    import faulthandler

    from benchmarks._models import mnist_cnn, mnist_mlp
    from benchmarks._timing import fit_seconds

    # a run about to be killed for its time limit says where it was
    faulthandler.dump_traceback_later(max(1.0, float(os.environ.get("FF_CHILD_TIMEOUT", "600")) - 5))
    if framework == "torch":
        print(json.dumps(_torch_samples_per_s(model, batch)))
        return
    if framework == "tf":
        try:
            import tensorflow as tf
        except ImportError:
            print(json.dumps({"skip": "TensorFlow is not installed on this machine"}))
            return
        if not tf.config.list_physical_devices("GPU"):
            print(json.dumps({"skip": "TensorFlow sees no GPU"}))
            return
        k = tf.keras
    else:
        sys.argv = [sys.argv[0], "-ll:gpu", str(gpus)]
        import flexflow_keras as k
    build = mnist_mlp if model == "mlp" else mnist_cnn
    k.utils.set_random_seed(1)
    m, x, y, loss = build(k, batch, TIMED_STEPS)
    m.compile(optimizer="adam", loss=loss)
    t0 = time.perf_counter()
    first = m.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False,
                  steps_per_epoch=20).history["loss"][0]
    warm = time.perf_counter() - t0  # the first fit compiles every kernel
    # steady state: a fit of all TIMED_STEPS batches minus one of half of them (fixed costs cancel)
    half = fit_seconds(m, x, y, batch, TIMED_STEPS // 2)
    whole = fit_seconds(m, x, y, batch, TIMED_STEPS)
    ms = (whole - half) / (TIMED_STEPS - TIMED_STEPS // 2) * 1e3
    print(json.dumps({"samples_per_s": batch / (ms / 1e3), "loss": first, "first_fit_s": warm}), flush=True)
    if os.environ.get("FF_GPU_CHECK_PROFILE"):
        _profiled(os.environ["FF_GPU_CHECK_PROFILE"], lambda: fit_seconds(m, x, y, batch, 100))


def _train(framework: str, model: str, batch: int, gpus: int, timeout: float, **env) -> dict:
    timeout = min(timeout, DEADLINE - time.perf_counter())
    if timeout < 10:
        return {"skip": "the check's time budget was spent"}
    cmd = [sys.executable, os.path.abspath(__file__), "--train", framework, model, str(batch), str(gpus)]
    env = _env(FF_CHILD_TIMEOUT=str(timeout), **env)
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = [t.decode(errors="replace") if isinstance(t, bytes) else (t or "") for t in (e.stdout, e.stderr)]
        _save("training.log", f"==== {' '.join(cmd[2:])} (timed out)\n{out[0]}\n{out[1]}\n", append=True)
        return {"skip": f"timed out after {timeout:.0f} s"}
    _save("training.log", f"==== {' '.join(cmd[2:])} (exit {proc.returncode})\n{proc.stdout}\n{proc.stderr}\n",
          append=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        err = proc.stderr.strip().splitlines() or ["no output"]
        why = next((ln for ln in reversed(err) if "rror" in ln), err[-1])
        return {"skip": f"failed (exit {proc.returncode}): {why[:300]}"}
    return json.loads(lines[-1])


def run_training(per_run_timeout: float) -> None:
    models = (("mlp", 64), ("cnn", 64))
    order = [("ff", 1, "mlp"), ("ff", 1, "cnn"), ("ff", 0, "mlp"), ("profile", 1, "mlp"), ("numba", 1, "mlp"),
             ("ff", 0, "cnn"), ("profile", 1, "cnn"),
             ("torch", 1, "mlp"), ("torch", 1, "cnn"), ("tf", 1, "mlp"), ("tf", 1, "cnn")]  # GPU figures first
    runs = {}
    for framework, gpus, model in order:
        if framework in ("torch", "tf") and not PEERS:
            runs[framework, gpus, model] = {"skip": "--no-peers"}
        elif framework == "profile":  # where a GPU step's host time goes: every task on the calling thread
            if OUT_DIR:
                seq = _train("ff", model, 64, gpus, per_run_timeout, FF_EXECUTOR="sequential",
                             FF_GPU_CHECK_PROFILE=os.path.join(OUT_DIR, f"profile_{model}_gpu.txt"))
                row(f"MNIST {model.upper()} b64, -ll:gpu 1, sequential executor",
                    f"{seq['samples_per_s']:.0f} samples/s" if "skip" not in seq else f"not measured: {seq['skip']}")
        elif framework == "numba":  # the same run with every launch through numba-cuda's dispatch
            r = _train("ff", model, 64, gpus, per_run_timeout, FF_DIRECT_LAUNCH="0")
            row(f"MNIST {model.upper()} b64, -ll:gpu 1, numba's dispatch (FF_DIRECT_LAUNCH=0)",
                f"{r['samples_per_s']:.0f} samples/s" if "skip" not in r else f"not measured: {r['skip']}")
        else:
            runs[framework, gpus, model] = _train(framework, model, 64, gpus, per_run_timeout)
    for model, batch in models:
        ours, cpu = runs["ff", 1, model], runs["ff", 0, model]
        tf, torch = runs["tf", 1, model], runs["torch", 1, model]
        name = f"MNIST {model.upper()} b{batch}"
        if "skip" in ours:
            row(f"{name}, -ll:gpu 1", f"not measured: {ours['skip']}", "", "FAIL")
            continue
        row(f"{name}, -ll:gpu 1", f"{ours['samples_per_s']:.0f} samples/s (first fit, compiling: "
                                  f"{ours['first_fit_s']:.1f} s)")
        if "skip" in cpu:
            row(f"{name}, vs our CPU run", f"not measured: {cpu['skip']}", ">= 20x")
            row(f"{name}, loss -ll:gpu 1 vs 0", f"not measured: {cpu['skip']}", "<= 1e-4 rel.")
        else:
            r = ours["samples_per_s"] / cpu["samples_per_s"]
            row(f"{name}, vs our CPU run", f"{r:.1f}x ({cpu['samples_per_s']:.0f} samples/s on CPU, "
                                           f"{os.cpu_count()} cores)", ">= 20x", "ok" if r >= 20 else "below target")
            d = abs(ours["loss"] - cpu["loss"]) / max(abs(cpu["loss"]), 1e-12)
            row(f"{name}, loss -ll:gpu 1 vs 0", f"{ours['loss']:.6f} vs {cpu['loss']:.6f} ({d:.1e} rel.)",
                "<= 1e-4 rel.", "ok" if d <= 1e-4 else "FAIL")
        if "skip" in tf:
            row(f"{name}, vs tf.keras on the GPU", f"not measured: {tf['skip']}", ">= 1.0x")
        else:
            r = ours["samples_per_s"] / tf["samples_per_s"]
            row(f"{name}, vs tf.keras on the GPU", f"{r:.2f}x ({tf['samples_per_s']:.0f} samples/s)", ">= 1.0x",
                "ok" if r >= 1.0 else "below target")
        if "skip" not in torch:
            r = ours["samples_per_s"] / torch["samples_per_s"]
            row(f"{name}, vs PyTorch eager (context)", f"{r:.2f}x ({torch['samples_per_s']:.0f} samples/s)")
        else:
            row(f"{name}, vs PyTorch eager (context)", f"not measured: {torch['skip']}")


def _replay(rtm, step, X, per):
    with rtm.trace("steps"):
        for _ in range(per):
            rtm.launch(step, X)


def _profiled(name: str, fn) -> None:
    """Run `fn` under cProfile and write the top functions by own and by cumulative time to `name` (a path,
    or a file name under --out). Profile runs on the sequential executor, where every task runs on the
    calling thread."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    try:
        fn()
    finally:
        prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(40)
    stats.sort_stats("cumulative").print_stats(60)
    # who still reaches numba-cuda's context checks and driver calls, and who makes device arrays
    stats.print_callers("_require_cuda_context|safe_cuda_api_call|devicearray.py.*__init__")
    if os.path.isabs(name):
        with open(name, "a") as f:
            f.write(out.getvalue())
    else:
        _save(name, out.getvalue(), append=True)


def _bump_kernel():
    global cuda
    from numba import cuda as numba_cuda

    cuda = numba_cuda  # a module global: the simulator swaps `cuda` in a kernel's globals

    @cuda.jit
    def bump(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] += 1

    return bump


def _per_call_us(fn, reps: int = 2000) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps * 1e6


def run_host_costs() -> None:
    """The host cost of each piece of a GPU task's path, alone: what the traced-task figure is made of."""
    import numpy as np

    from kernels.gpu import direct, flat, launch
    from kernels.gpu.launch import on_stream
    from runtime import gpu, streams

    bump = _bump_kernel()
    x = cuda.to_device(np.zeros(1024, np.float32))
    x2 = cuda.to_device(np.zeros((32, 32), np.float32))
    stream = cuda.stream()
    ev = streams.record(stream)

    def via_helper():
        with on_stream(stream):
            launch(bump, x.size, x)

    def on_device():
        with gpu.on_device(0):
            pass

    def numba_dispatch():
        direct._state["on"] = False
        try:
            via_helper()
        finally:
            direct._state["on"] = None

    parts = [("numba launch, kernel[grid, block, stream](x)", lambda: bump[4, 256, stream](x)),
             ("kernels.gpu.launch on a stream (direct launch)", via_helper),
             ("kernels.gpu.launch, numba's dispatch (FF_DIRECT_LAUNCH=0)", numba_dispatch),
             ("flat(x) of a 2-D device array (cached view)", lambda: flat(x2)),
             ("with gpu.on_device(0)", on_device),
             ("streams.record (pooled event)", lambda: streams.record(stream)),
             ("new event + record (unpooled)", lambda: streams._new_event().record(stream)),
             ("event.wait(stream)", lambda: ev.event.wait(stream)),
             ("event.query()", lambda: streams.finished(ev))]
    for name, fn in parts:
        us = _per_call_us(fn)
        row(f"host cost: {name}", f"{us:.1f} us")
    cuda.synchronize()


def run_traced_tasks(count: int = 2000) -> None:
    import numpy as np

    import runtime as rt
    from kernels.gpu import flat, launch

    bump = _bump_kernel()

    @rt.task(privileges=[rt.RW])
    def step(x):
        x += 1

    @step.variant(rt.ProcKind.GPU)
    def step_gpu(x):
        launch(bump, x.size, flat(x))

    with rt.Runtime(rt.Machine(cpus=1, gpus=1, utils=1)) as rtm:
        X = rt.Region((1024,), np.float32, name="x")
        per = 50
        with rtm.trace("steps"):
            for _ in range(per):
                rtm.launch(step, X)
        rtm.fence()
        t0 = time.perf_counter()
        for _ in range(count // per):
            with rtm.trace("steps"):
                for _ in range(per):
                    rtm.launch(step, X)
        issued = time.perf_counter() - t0
        rtm.fence()
        total = time.perf_counter() - t0

    n = (count // per) * per
    row("host time per traced GPU task", f"{issued / n * 1e6:.1f} us issue, {total / n * 1e6:.1f} us with the GPU",
        "<= 3 us", "ok" if issued / n <= 3e-6 else "below target")
    with rt.Runtime(rt.Machine(cpus=1, gpus=1, utils=1), executor="sequential") as rtm:
        X = rt.Region((1024,), np.float32, name="x")
        _replay(rtm, step, X, per)
        rtm.fence()
        t0 = time.perf_counter()
        for _ in range(count // per):
            _replay(rtm, step, X, per)
        rtm.fence()
        seq = time.perf_counter() - t0
        if OUT_DIR:
            _profiled("profile_traced_tasks.txt", lambda: [_replay(rtm, step, X, per) for _ in range(10)])
    row("... the same on the sequential executor", f"{seq / n * 1e6:.1f} us per task (no worker threads)")


def print_table() -> None:
    widths = [max(len(r[i]) for r in ROWS + [("check", "measured", "target", "verdict")]) for i in range(4)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print()
    print(line.format("check", "measured", "target", "verdict"))
    print(line.format(*("-" * w for w in widths)))
    for r in ROWS:
        print(line.format(*r))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=480, help="seconds for the whole check (default 8 min)")
    ap.add_argument("--out", help="a folder for the full logs, profiles and the table as JSON")
    ap.add_argument("--only", help="comma-separated steps: " + ", ".join(STEP_NAMES))
    ap.add_argument("--no-peers", action="store_true", help="no tf.keras / PyTorch training runs")
    ap.add_argument("--train", nargs=4, metavar=("FRAMEWORK", "MODEL", "BATCH", "GPUS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.train:
        fw, model, batch, gpus = args.train
        _train_child(fw, model, int(batch), int(gpus))
        return 0
    only = set(args.only.split(",")) if args.only else set(STEP_NAMES)
    if only - set(STEP_NAMES):
        ap.error(f"--only: unknown step(s) {sorted(only - set(STEP_NAMES))}; the steps are {', '.join(STEP_NAMES)}")
    if args.out and os.path.exists(args.out) and not os.path.isdir(args.out):
        ap.error(f"--out {args.out} is a file; give a folder (it is created when missing)")
    refuse_without_gpu()
    global OUT_DIR, DEADLINE, PEERS
    if args.out:
        OUT_DIR = args.out
        os.makedirs(OUT_DIR, exist_ok=True)
    t0 = time.perf_counter()
    DEADLINE, PEERS = t0 + args.budget, not args.no_peers
    steps = [("machine", machine_rows), ("sgemm", run_sgemm), ("host", run_host_costs),
             ("traced", run_traced_tasks), ("kernels", lambda: run_kernel_tests(0.35 * args.budget)),
             ("training", lambda: run_training(0.35 * args.budget))]
    for name, fn in steps:
        if name not in only:
            continue
        if time.perf_counter() - t0 > args.budget:
            row(name, f"not measured: the {args.budget:.0f} s budget was spent")
            continue
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - one failing step must not hide the others' figures
            traceback.print_exc()
            row(name, f"not measured: {type(e).__name__}: {str(e)[:120]}", "", "FAIL")
    row("wall time of this check", f"{time.perf_counter() - t0:.0f} s", f"<= {args.budget:.0f} s")
    print_table()
    _save("table.json", json.dumps(ROWS, indent=1))
    return 1 if any(r[3] == "FAIL" for r in ROWS) else 0


if __name__ == "__main__":
    sys.exit(main())
