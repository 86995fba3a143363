"""The catalogue of bad inputs: each `Case` is a command line a user might type (or a short script they
might write), the exit status it must end with and a fragment of the message it must print. The same
cases drive `test_error_catalogue.py` and write `docs/errors.md`, so the document shows what the code
prints today:

    python tests/e2e/error_catalogue.py --write docs/errors.md

Adding a case is one `Case(...)` in `CASES` (and, when it needs files, a small function decorated with
`@setup`). Every case must fail before training starts, so the whole catalogue stays fast.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "errors.md"
PREFIX = "flexflow_keras: error:"
TIMEOUT_S = 120


def is_hint(line: str) -> bool:
    """The parenthesised line that ends an error block and names --debug (its wording may grow)."""
    return line.startswith("(") and "--debug" in line


@dataclass(frozen=True)
class Case:
    """One bad input.

    Args:
        id: a short unique slug (the test id and the document's anchor).
        title: what is wrong, in a few words.
        args: the command line after `python`: a script (relative to the repository, or `{tmp}/...`) and
            its flags; `{tmp}` is the case's own temporary folder.
        exit_code: 2 for usage errors (flags, configuration, strategy files), 1 for other user errors.
        fragment: a part of the message that must appear, or a tuple of parts that must all appear.
        group: the document's section.
        setup: the name of a `@setup` function that prepares files in `{tmp}` first.
        env: environment variables set for the run.
        code: a script's source; it is written to `{tmp}/script.py`, run as the script, and shown.
    """

    id: str
    title: str
    args: tuple[str, ...]
    exit_code: int
    fragment: str | tuple[str, ...]
    group: str = "Flags"
    setup: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    code: str | None = None


SETUPS: dict[str, Callable[[Path], None]] = {}


def setup(fn: Callable[[Path], None]) -> Callable[[Path], None]:
    """Register a preparation step by its function name; its docstring is shown in the document."""
    SETUPS[fn.__name__] = fn
    return fn


@setup
def not_a_strategy_file(tmp: Path) -> None:
    """`<tmp>/strategy.json` holds text that is not JSON."""
    (tmp / "strategy.json").write_text("data parallel, please\n")


@setup
def empty_folder(tmp: Path) -> None:
    """`<tmp>/data/` is an empty folder."""
    (tmp / "data").mkdir()


@setup
def text_files(tmp: Path) -> None:
    """`<tmp>/data/` holds three .txt files."""
    (tmp / "data").mkdir()
    for i in range(3):
        (tmp / "data" / f"note{i}.txt").write_text("hello\n")


@setup
def lone_npy(tmp: Path) -> None:
    """`<tmp>/x.npy` with no `y.npy` beside it."""
    import numpy as np

    np.save(tmp / "x.npy", np.zeros((4, 28, 28), np.uint8))


@setup
def npz_other_keys(tmp: Path) -> None:
    """`<tmp>/other.npz` holds arrays named `a` and `b`."""
    import numpy as np

    np.savez(tmp / "other.npz", a=np.zeros(3), b=np.ones(3))


@setup
def csv_with_text(tmp: Path) -> None:
    """`<tmp>/bad.csv`: a header `a,b,label` and a cell holding `x`."""
    (tmp / "bad.csv").write_text("a,b,label\n1,2,0\n3,x,1\n")


@setup
def image_folder(tmp: Path) -> None:
    """`<tmp>/images/c0/`, `<tmp>/images/c1/`: two class folders of 28x28 grayscale PNGs."""
    import numpy as np
    from PIL import Image

    for c in range(2):
        (tmp / "images" / f"c{c}").mkdir(parents=True)
        for i in range(4):
            Image.fromarray(np.full((28, 28), 40 * i + c, np.uint8)).save(tmp / "images" / f"c{c}" / f"{i}.png")


@setup
def truncated_checkpoint(tmp: Path) -> None:
    """`<tmp>/model.keras` holds 500 bytes that are not a zip archive (a save cut short)."""
    (tmp / "model.keras").write_bytes(b"PK\x03\x04" + bytes(496))


MLP = "examples/mnist_mlp.py"
CNN = "examples/mnist_cnn.py"

SCRIPT_HEAD = """import numpy as np
import flexflow_keras as keras

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
model.compile("sgd", "sparse_categorical_crossentropy")
"""

CASES: list[Case] = [
    # --- flags ---------------------------------------------------------------------------------------------
    Case("flag-not-a-number", "a number flag given a word", (MLP, "-ll:fsize", "abc"), 2,
         "Flag -ll:fsize expects an int value, received 'abc'"),
    Case("flag-without-value", "a flag at the end of the line, without its value", (MLP, "-e"), 2,
         "Flag -e needs a value"),
    Case("batch-size-zero", "a batch size of 0", (MLP, "-b", "0"), 2,
         ("-b/--batch-size must be a positive integer", "received 0")),
    Case("gpu-negative", "a negative GPU count", (MLP, "-ll:gpu", "-1"), 2, "-ll:gpu must be zero or more"),
    Case("zsize-negative", "a negative zero-copy memory size", (MLP, "-ll:zsize", "-5"), 2,
         ("-ll:zsize must be", "received -5")),
    Case("executor-unknown", "an executor that does not exist", (MLP, "--executor", "fast"), 2,
         "--executor must be 'threaded' or 'sequential'"),
    # --- mistyped flags and settings that cannot be --------------------------------------------------------
    Case("long-flag-near-miss", "a near miss of a long flag", (MLP, "--epoch", "3"), 2,
         "Unknown flag --epoch: did you mean --epochs?"),
    Case("runtime-flag-unknown", "an -ll: flag that does not exist", (MLP, "-ll:gpus", "2"), 2,
         "Unknown flag -ll:gpus: did you mean -ll:gpu?"),
    Case("zsize-zero", "no zero-copy memory", (MLP, "-ll:zsize", "0"), 2,
         "-ll:zsize must be a positive number of MB (1 or more), received 0"),
    Case("epochs-zero", "zero epochs", (MLP, "-e", "0"), 2, "-e/--epochs must be a positive integer"),
    Case("gpus-not-present", "GPUs asked for on a host without them", (MLP, "-ll:gpu", "2"), 2,
         ("-ll:gpu 2 asks for 2 GPU(s)", "Pass -ll:gpu 0")),
    Case("env-out-of-range", "an FF_* variable out of range", (MLP,), 2, "FF_ZSIZE must be a positive number",
         group="Environment", env={"FF_ZSIZE": "0"}),
    # --- environment ----------------------------------------------------------------------------------------
    Case("env-not-a-number", "an FF_* variable that is not a number", (MLP,), 2,
         ("FF_EPOCHS", "an int", "received 'abc'"), group="Environment", env={"FF_EPOCHS": "abc"}),
    # --- strategy flags -------------------------------------------------------------------------------------
    Case("search-budget-without-search", "a search setting where no search runs",
         (MLP, "--search-budget", "5", "--only-data-parallel"), 2,
         "--search-budget only steers the strategy search", group="Strategy flags"),
    Case("search-alpha-negative", "a negative search temperature", (MLP, "--search-alpha", "-1"), 2,
         ("--search-alpha must be", "received -1.0"), group="Strategy flags"),
    Case("data-parallel-degree-zero", "a data-parallel degree of 0", (MLP, "--data-parallel-degree", "0"), 2,
         "--data-parallel-degree must be a positive integer", group="Strategy flags"),
    Case("export-strategy-svg", "exporting the strategy to an .svg path",
         (MLP, "--export-strategy", "{tmp}/strategy.svg"), 2, "give a .json path", group="Strategy flags"),
    Case("export-strategy-no-folder", "exporting the strategy into a folder that does not exist",
         (MLP, "--export-strategy", "{tmp}/missing/strategy.json"), 2, "in a folder that does not exist",
         group="Strategy flags"),
    Case("import-strategy-missing", "importing a strategy file that does not exist",
         (MLP, "--import-strategy", "{tmp}/strategy.json"), 2, "the file does not exist",
         group="Strategy flags"),
    Case("import-strategy-not-json", "importing a strategy file that is not JSON",
         (MLP, "--import-strategy", "{tmp}/strategy.json"), 2, "not valid JSON", group="Strategy flags",
         setup="not_a_strategy_file"),
    Case("machine-model-unknown", "a machine model that is neither shipped nor a file",
         (MLP, "--machine-model-file", "dgx9", "--search-only"), 2, "dgx1_v100, hgx_h200",
         group="Strategy flags"),
    # --- datasets -------------------------------------------------------------------------------------------
    Case("dataset-missing", "-d names a path that does not exist", (MLP, "-d", "{tmp}/missing.npz"), 1,
         "does not exist. Check the path, or drop -d", group="Datasets (-d)"),
    Case("dataset-empty-folder", "-d names an empty folder", (MLP, "-d", "{tmp}/data"), 1,
         "found an empty directory", group="Datasets (-d)", setup="empty_folder"),
    Case("dataset-text-files", "-d names a folder of text files", (MLP, "-d", "{tmp}/data"), 1,
         "found a directory of 3 .txt files", group="Datasets (-d)", setup="text_files"),
    Case("dataset-lone-npy", "-d names an .npy without its partner", (MLP, "-d", "{tmp}/x.npy"), 1,
         "needs its partner y.npy", group="Datasets (-d)", setup="lone_npy"),
    Case("dataset-npz-other-keys", "-d names an .npz of other arrays", (MLP, "-d", "{tmp}/other.npz"), 1,
         "found an .npz with keys a, b", group="Datasets (-d)", setup="npz_other_keys"),
    Case("dataset-csv-text-cell", "-d names a CSV with a word among the numbers", (MLP, "-d", "{tmp}/bad.csv"), 1,
         ("column 'b'", "not a number"), group="Datasets (-d)", setup="csv_with_text"),
    Case("dataset-wrong-for-loader", "-d holds images where mnist.load_data() needs arrays",
         (MLP, "-d", "{tmp}/images"), 1, "is a folder of class sub-folders of images", group="Datasets (-d)",
         setup="image_folder"),
    Case("image-folder-flat-model", "an image folder for a model whose input is flat",
         ("{tmp}/script.py", "-d", "{tmp}/images"), 1, "is an image folder, but the model's input has samples of shape (784,)",
         group="Datasets (-d)", setup="image_folder",
         code="import flexflow_keras as keras\n\nmodel = keras.Sequential([keras.Input((784,)), "
              "keras.layers.Dense(2)])\nmodel.compile('sgd', 'sparse_categorical_crossentropy')\nmodel.fit()\n"),
    Case("zsize-too-small-for-ring", "-ll:zsize too small for two batches of the loaders' ring",
         ("{tmp}/script.py", "-d", "{tmp}/images", "-ll:zsize", "1", "-b", "8"), 2,
         ("-ll:zsize 1 MB holds 0 batches", "is needed for 2 batches"), group="Datasets (-d)", setup="image_folder",
         code="import flexflow_keras as keras\n\nmodel = keras.Sequential([keras.Input((256, 256, 3)), "
              "keras.layers.Flatten(), keras.layers.Dense(2)])\n"
              "model.compile('sgd', 'sparse_categorical_crossentropy')\nmodel.fit()\n"),
    # --- checkpoints ----------------------------------------------------------------------------------------
    Case("load-truncated-checkpoint", "load_model() on a file cut short", ("{tmp}/script.py",), 1,
         "is not a readable .keras model file", group="Checkpoints", setup="truncated_checkpoint",
         code="import sys\nimport flexflow_keras as keras\n\nkeras.models.load_model(sys.argv[0].replace("
              "'script.py', 'model.keras'))\n"),
    Case("save-wrong-suffix", "model.save() to a SavedModel-style name", ("{tmp}/script.py",), 1,
         "the file name must end in `.keras`", group="Checkpoints",
         code=SCRIPT_HEAD + "model.save('model.pb')\n"),
    # --- calls in a script ----------------------------------------------------------------------------------
    Case("fit-zero-samples", "fit() on arrays with no samples", ("{tmp}/script.py",), 1,
         "fit(): x has 0 samples", group="Calls in a script",
         code=SCRIPT_HEAD + "model.fit(np.zeros((0, 4)), np.zeros((0,), int))\n"),
    Case("validation-split-out-of-range", "validation_split above 1", ("{tmp}/script.py",), 1,
         "`validation_split` must be a float between 0 and 1", group="Calls in a script",
         code=SCRIPT_HEAD + "model.fit(np.ones((10, 4)), np.zeros((10,), int), validation_split=1.5)\n"),
    Case("validation-split-too-few-samples", "validation_split that leaves no sample on one side",
         ("{tmp}/script.py",), 1, "contains 1 samples, which is not sufficient to split", group="Calls in a script",
         code=SCRIPT_HEAD + "model.fit(np.ones((1, 4)), np.zeros((1,), int), validation_split=0.5)\n"),
    Case("predict-zero-samples", "predict() on an array with no samples", ("{tmp}/script.py",), 1,
         "predict(): x has 0 samples", group="Calls in a script",
         code=SCRIPT_HEAD + "model.predict(np.zeros((0, 4)))\n"),
]


# --- running ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Result:
    """What a case printed: exit status, the error block (tmp paths as `<tmp>`), and the raw output."""

    case: Case
    returncode: int
    block: str | None
    stdout: str
    stderr: str


def command(case: Case) -> str:
    """The command line as the document shows it."""
    env = " ".join(f"{k}={v}" for k, v in case.env.items())
    line = " ".join(["python", *(a.replace("{tmp}", "<tmp>") for a in case.args)])
    return f"{env} {line}" if env else line


def normalize(text: str, tmp: Path) -> str:
    for path, name in ((tmp.resolve(), "<tmp>"), (tmp, "<tmp>"), (ROOT, "<repo>")):
        text = text.replace(str(path), name)
    return text


def error_block(stderr: str) -> str | None:
    """The lines from `flexflow_keras: error:` through the `--debug` hint (None when there is none)."""
    lines = stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(PREFIX)), None)
    if start is None:
        return None
    end = next((i for i in range(start, len(lines)) if is_hint(lines[i])), len(lines) - 1)
    return "\n".join(lines[start:end + 1])


def fragments(case: Case) -> tuple[str, ...]:
    return (case.fragment,) if isinstance(case.fragment, str) else tuple(case.fragment)


def holds(r: Result) -> bool:
    """The case printed one error block holding every fragment of its message."""
    return r.block is not None and all(f in r.block for f in fragments(r.case))


def run_case(case: Case, tmp: Path) -> Result:
    """Run one case in its own folder `tmp` (also HOME, so the Keras cache is empty)."""
    tmp.mkdir(parents=True, exist_ok=True)
    if case.setup:
        SETUPS[case.setup](tmp)
    if case.code is not None:
        (tmp / "script.py").write_text(case.code)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FF_")}
    env.update(HOME=str(tmp), PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.update(case.env)
    args = [a.replace("{tmp}", str(tmp)) for a in case.args]
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=str(ROOT),
                          timeout=TIMEOUT_S)
    block = error_block(proc.stderr)
    return Result(case, proc.returncode, None if block is None else normalize(block, tmp),
                  proc.stdout, proc.stderr)


def run_all(cases: Iterable[Case], base: Path, workers: int = 2) -> dict[str, Result]:
    """Every case, `workers` at a time, each in `base/<id>`; results by id in the catalogue's order."""
    cases = list(cases)
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate case ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda c: run_case(c, base / c.id), cases))
    return {r.case.id: r for r in results}


# --- the document ---------------------------------------------------------------------------------------------
INTRO = """# Errors: bad inputs and what they print

Generated from the cases in `tests/e2e/error_catalogue.py` by
`python tests/e2e/error_catalogue.py --write docs/errors.md`; `tests/e2e/test_error_catalogue.py` runs
every case and fails when this file is not what they print today. Do not edit it by hand.

A user error in a script run from a shell prints one block, `flexflow_keras: error: <message>`, and exits
with status 2 for usage errors (flags, configuration, strategy files) and 1 for the others; `--debug` or
`FF_DEBUG=1` adds the traceback. Each case runs in a fresh temporary folder, written `<tmp>` below, which
is also `HOME` (an empty Keras cache).
"""


def render(results: Mapping[str, Result]) -> str:
    """The markdown document for `results` (in their order, grouped by section)."""
    out = [INTRO]
    groups: dict[str, list[Result]] = {}
    for r in results.values():
        groups.setdefault(r.case.group, []).append(r)
    out.append("| case | what is wrong | exit |\n| --- | --- | --- |\n" + "".join(
        f"| [`{r.case.id}`](#{r.case.id}) | {r.case.title} | {r.returncode} |\n" for r in results.values()))
    for group, items in groups.items():
        out.append(f"## {group}\n")
        for r in items:
            c = r.case
            parts = [f"### {c.id}\n\n{c.title[0].upper()}{c.title[1:]}.\n"]
            if c.setup:
                parts.append(f"Before the run: {(SETUPS[c.setup].__doc__ or c.setup).strip()}\n")
            if c.code is not None:
                parts.append(f"`<tmp>/script.py`:\n\n```python\n{c.code.rstrip()}\n```\n")
            parts.append(f"```bash\n{command(c)}\n```\n")
            parts.append(f"Exit status {r.returncode}:\n\n```text\n{r.block or '(no error block)'}\n```\n")
            out.append("\n".join(parts))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="write the markdown here (default: print it)")
    parser.add_argument("--workers", type=int, default=2)
    opts = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ff_errors_") as base:
        results = run_all(CASES, Path(base), opts.workers)
    bad = [r.case.id for r in results.values() if r.returncode != r.case.exit_code or not holds(r)]
    text = render(results)
    if opts.write:
        opts.write.write_text(text)
    else:
        sys.stdout.write(text)
    if bad:
        sys.stderr.write(f"cases that do not hold: {', '.join(bad)}\n")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
