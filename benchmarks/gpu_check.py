"""The one-command GPU check of issue 11 (at most ~8 minutes on one GPU):

    python benchmarks/gpu_check.py [--budget 480]

1. every CUDA kernel test on the device (tests/kernels/cuda with NUMBA_ENABLE_CUDASIM=0, the scripted
   conv / pool / optimizer checks with FF_CUDA_DEVICE=1) and the PTX compile test for sm_80 and sm_90;
2. sgemm 4096^3: our path (kernels.gpu.linear.gemm_cuda: cuBLAS through CuPy when installed), the Numba
   GEMM alone, and cuBLAS called directly (CuPy), timed with CUDA events;
3. MNIST MLP and CNN training samples/s with -ll:gpu 1, against our CPU run and tf.keras on the same GPU
   (only when TensorFlow sees a GPU);
4. the host time per traced GPU task (a trace of GPU tasks replayed; host time to issue vs. total);
5. a table printed last: measured value, target, verdict. A figure that was not measured says why; none
   is ever estimated. Without a usable GPU the script refuses and measures nothing (exit status 2).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("FF_LOG_LEVEL", "WARNING")

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


def run_kernel_tests(timeout: float) -> None:
    targets = ["tests/kernels/cuda", "tests/kernels/test_conv2d_cuda.py", "tests/kernels/test_pool2d_cuda.py",
               "tests/kernels/test_optimizers_cuda.py", "tests/kernels/test_cuda_ptx.py"]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *targets],
                              cwd=ROOT, env=_env(FF_CUDA_DEVICE="1", FF_PTX_ALL_ARCHS="1"),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        row("kernel tests on the device", f"timed out after {timeout:.0f} s", "all pass", "FAIL")
        return
    last = (proc.stdout.strip().splitlines() or ["no output"])[-1]
    print(proc.stdout[-4000:], proc.stderr[-2000:], sep="\n")
    row("kernel tests on the device", f"{last} ({time.perf_counter() - t0:.0f} s)", "all pass",
        "ok" if proc.returncode == 0 else "FAIL")


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


def _train_child(framework: str, model: str, batch: int, gpus: int) -> None:
    """In a child process: one model's steady-state training samples/s, printed as JSON."""
    from benchmarks._models import mnist_cnn, mnist_mlp
    from benchmarks._timing import step_ms

    if framework == "tf":
        import tensorflow as tf

        if not tf.config.list_physical_devices("GPU"):
            print(json.dumps({"skip": "TensorFlow sees no GPU"}))
            return
        k = tf.keras
    else:
        sys.argv = [sys.argv[0], "-ll:gpu", str(gpus)]
        import flexflow_keras as k
    build = mnist_mlp if model == "mlp" else mnist_cnn
    m, x, y, loss = build(k, batch, 20)
    m.compile(optimizer="adam", loss=loss)
    m.fit(x, y, batch_size=batch, epochs=1, verbose=0)  # warm-up: compiles every kernel
    ms = step_ms(m, x, y, batch, 20, tries=1)
    print(json.dumps({"samples_per_s": batch / (ms / 1e3)}))


def _train(framework: str, model: str, batch: int, gpus: int, timeout: float) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--train", framework, model, str(batch), str(gpus)]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"skip": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"skip": f"failed (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1:] or ''}"}
    return json.loads(lines[-1])


def run_training(per_run_timeout: float) -> None:
    for model, batch in (("mlp", 64), ("cnn", 64)):
        ours = _train("ff", model, batch, 1, per_run_timeout)
        cpu = _train("ff", model, batch, 0, per_run_timeout)
        tf = _train("tf", model, batch, 1, per_run_timeout)
        name = f"MNIST {model.upper()} b{batch}"
        if "skip" in ours:
            row(f"{name}, -ll:gpu 1", f"not measured: {ours['skip']}", "", "FAIL")
            continue
        row(f"{name}, -ll:gpu 1", f"{ours['samples_per_s']:.0f} samples/s")
        if "skip" in cpu:
            row(f"{name}, vs our CPU run", f"not measured: {cpu['skip']}", ">= 20x")
        else:
            r = ours["samples_per_s"] / cpu["samples_per_s"]
            row(f"{name}, vs our CPU run", f"{r:.1f}x ({cpu['samples_per_s']:.0f} samples/s on CPU)", ">= 20x",
                "ok" if r >= 20 else "below target")
        if "skip" in tf:
            row(f"{name}, vs tf.keras on the GPU", f"not measured: {tf['skip']}", ">= 1.0x")
        else:
            r = ours["samples_per_s"] / tf["samples_per_s"]
            row(f"{name}, vs tf.keras on the GPU", f"{r:.2f}x ({tf['samples_per_s']:.0f} samples/s)", ">= 1.0x",
                "ok" if r >= 1.0 else "below target")


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
        "", "")


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
    ap.add_argument("--train", nargs=4, metavar=("FRAMEWORK", "MODEL", "BATCH", "GPUS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.train:
        fw, model, batch, gpus = args.train
        _train_child(fw, model, int(batch), int(gpus))
        return 0
    refuse_without_gpu()
    t0 = time.perf_counter()
    steps = [("kernel tests", lambda: run_kernel_tests(0.35 * args.budget)), ("sgemm", run_sgemm),
             ("training", lambda: run_training(0.07 * args.budget)), ("traced tasks", run_traced_tasks)]
    for name, fn in steps:
        if time.perf_counter() - t0 > args.budget:
            row(name, f"not measured: the {args.budget:.0f} s budget was spent")
            continue
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - one failing step must not hide the others' figures
            row(name, f"not measured: {type(e).__name__}: {str(e)[:120]}", "", "FAIL")
    row("wall time of this check", f"{time.perf_counter() - t0:.0f} s", f"<= {args.budget:.0f} s")
    print_table()
    return 1 if any(r[3] == "FAIL" for r in ROWS) else 0


if __name__ == "__main__":
    sys.exit(main())
