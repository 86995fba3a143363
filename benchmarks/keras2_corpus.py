"""The 16 example scripts of the Keras 2.3.1 release, run whole under flexflow_keras and under Keras 3
(TensorFlow backend), as a user runs them: one fresh process per run, the import lines as they are.

    python benchmarks/keras2_corpus.py                      # every example, 3 runs per framework, quiet
    python benchmarks/keras2_corpus.py --loaded             # the same with a spinning process on one core
    python benchmarks/keras2_corpus.py --only mnist_mlp,imdb_lstm --runs 5

Each run copies the script with one epoch (every ``epochs = N`` says 1; `tests/keras2_examples.py` also
sizes addition_rnn down), gives both frameworks the same synthetic arrays from ``keras.datasets.*.
load_data`` (benchmarks/_corpus_run.py; Keras' loaders would download), an empty HOME, a fresh working
folder and, for flexflow_keras, a fresh strategy cache and its default flags (the strategy search
included): what a first-time user meets. The figure is the whole process's wall time (imports, graph
building, the search, training, evaluation, the script's own plots and files); the time inside ``fit``
is shown beside it. Runs alternate between the frameworks. A script Keras 3 cannot run is reported with
its first error and timed for flexflow_keras alone once.

Target (issue 9): every example that Keras 3 runs is faster under flexflow_keras (ratio > 1: Keras 3's
median wall time over ours).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
import keras2_examples  # noqa: E402  tests/keras2_examples.py: the sdist, the sizing, the dataset files

CACHE = Path(os.environ.get("FF_TEST_CACHE", Path(tempfile.gettempdir()) / "flexflow_keras_test_cache"))
# mnist_mlp and antirectifier reshape to exactly 60000 training images; the other MNIST scripts get fewer
# so that the recurrent ones (784 steps for mnist_irnn) finish in minutes on a laptop CPU.
FULL_MNIST = {"mnist_mlp", "antirectifier"}
SMALL = dict(mnist=(4000, 1000), cifar10=(2000, 500), reuters=3000, imdb=(2500, 500), longest=300)
FULL = dict(SMALL, mnist=(60000, 10000))


def run_once(framework: str, script_text: str, script: str, data_dir: Path, timeout: float) -> dict:
    """One fresh process: wall seconds, seconds in fit, or the error's last lines."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "home").mkdir()
        path = tmp / f"{script}.py"
        path.write_text(script_text)
        out = tmp / "result.json"
        env = dict(os.environ, HOME=str(tmp / "home"), MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="3",
                   KERAS_BACKEND="tensorflow", FF_CACHE_DIR=str(tmp / "ffcache"), PYTHONUNBUFFERED="1")
        env.pop("KERAS_HOME", None)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        cmd = [sys.executable, str(HERE / "_corpus_run.py"), framework, str(data_dir), str(path), str(out)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        wall = time.perf_counter() - t0
        if proc.returncode != 0 or not out.exists():
            lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
            return {"error": " | ".join(lines[-2:])[-300:] or f"exit {proc.returncode}"}
        return {"wall": wall, **json.loads(out.read_text())}


def fmt(values, digits=1) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}..{max(values):.{digits}f})"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh-process runs per framework and example")
    ap.add_argument("--only", default=None, help="comma-separated example names: " + ", ".join(keras2_examples.NAMES))
    ap.add_argument("--loaded", action="store_true", help="keep one core busy with a spinning process")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    args = ap.parse_args(argv)
    names = args.only.split(",") if args.only else list(keras2_examples.NAMES)
    unknown = sorted(set(names) - set(keras2_examples.NAMES))
    if unknown:
        raise SystemExit(f"--only: unknown examples {unknown}; they are {', '.join(keras2_examples.NAMES)}")
    try:
        examples = keras2_examples.fetch(CACHE)
    except keras2_examples.Unavailable as e:
        raise SystemExit(f"keras2_corpus: {e}") from e
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.loaded else None
    results = {}
    try:
        with tempfile.TemporaryDirectory() as data:
            dirs = {"small": keras2_examples.write_datasets(Path(data) / "small", **SMALL),
                    "full": keras2_examples.write_datasets(Path(data) / "full", **FULL)}
            for name in names:
                text = keras2_examples.sized_text(examples, name, one_epoch=True)
                data_dir = next(iter(dirs["full" if name in FULL_MNIST else "small"].values())).parent
                got = {"keras": [], "flexflow_keras": []}
                for r in range(args.runs):
                    for fw in ("keras", "flexflow_keras"):
                        got[fw].append(run_once(fw, text, name, data_dir, args.timeout))
                    last = {fw: got[fw][-1] for fw in got}
                    print(f"  {name} run {r + 1}: " + ", ".join(
                        f"{fw} {v['wall']:.1f} s" if "wall" in v else f"{fw} failed: {v['error'][:120]}"
                        for fw, v in last.items()), file=sys.stderr, flush=True)
                    if "error" in got["keras"][-1]:
                        break  # Keras 3 cannot run it: one run of ours says whether we do
                results[name] = got
    finally:
        if busy is not None:
            busy.kill()
    report(results, args)


def report(results: dict, args) -> None:
    mode = "one core busy with another process" if args.loaded else "quiet"
    print(f"\n{os.cpu_count()} cores, {mode}; up to {args.runs} fresh-process runs per framework; whole-script "
          f"wall seconds, median (min..max); seconds inside fit beside them")
    print(f"{'example':28} {'Keras 3 wall':>20} {'ours wall':>20} {'ratio':>6}  {'Keras 3 fit':>18} "
          f"{'ours fit':>18}")
    faster = ran = 0
    for name, got in results.items():
        k_ok = [g for g in got["keras"] if "wall" in g]
        f_ok = [g for g in got["flexflow_keras"] if "wall" in g]
        ours = fmt([g["wall"] for g in f_ok]) if f_ok else "fails: " + got["flexflow_keras"][0]["error"][:60]
        if not k_ok or len(k_ok) < len(got["keras"]):
            print(f"{name:28} {'fails':>20} {ours:>20}   Keras 3: {got['keras'][-1]['error'][:90]}")
            continue
        ran += 1
        ratio = statistics.median(g["wall"] for g in k_ok) / statistics.median(g["wall"] for g in f_ok) if f_ok else 0
        faster += ratio > 1.0
        print(f"{name:28} {fmt([g['wall'] for g in k_ok]):>20} {ours:>20} {ratio:5.2f}x  "
              f"{fmt([g['fit_s'] for g in k_ok]):>18} {fmt([g['fit_s'] for g in f_ok]) if f_ok else '-':>18}")
    ours_ran = sum(any("wall" in g for g in got["flexflow_keras"]) for got in results.values())
    print(f"\nKeras 3 runs {ran} of {len(results)}, flexflow_keras {ours_ran}; flexflow_keras is faster on "
          f"{faster} of the {ran} Keras 3 runs (target: all).")


if __name__ == "__main__":
    main()
