"""The 16 example scripts of the Keras 2.3.1 release, for the corpus test (tests/e2e/test_keras2_corpus.py)
and the corpus benchmark (benchmarks/keras2_corpus.py).

`fetch` downloads the Keras 2.3.1 source distribution from the package index once per machine into a
cache folder (never into the repository) and extracts its examples; `sized_text` gives a script with the
size constants the runs change (never the logic); `write_datasets` writes synthetic files in each Keras
loader's layout, at the sizes asked for.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

VERSION = "2.3.1"
NAMES = ("mnist_mlp", "mnist_cnn", "cifar10_cnn", "reuters_mlp", "imdb_cnn", "imdb_fasttext", "imdb_lstm",
         "antirectifier", "mnist_transfer_cnn", "mnist_siamese", "mnist_denoising_autoencoder", "addition_rnn",
         "mnist_irnn", "variational_autoencoder", "reuters_mlp_relu_vs_selu", "mnist_hierarchical_rnn")
# script -> the dataset it loads (None: it makes its own data)
DATASET = {"mnist_mlp": "mnist", "mnist_cnn": "mnist", "cifar10_cnn": "cifar10", "reuters_mlp": "reuters",
           "imdb_cnn": "imdb", "imdb_fasttext": "imdb", "imdb_lstm": "imdb", "antirectifier": "mnist",
           "mnist_transfer_cnn": "mnist", "mnist_siamese": "mnist", "mnist_denoising_autoencoder": "mnist",
           "addition_rnn": None, "mnist_irnn": "mnist", "variational_autoencoder": "mnist",
           "reuters_mlp_relu_vs_selu": "reuters", "mnist_hierarchical_rnn": "mnist"}
# Size constants changed in every copy: addition_rnn calls fit 199 times on 50,000 generated questions
# whatever the epochs say; reuters_mlp_relu_vs_selu plots its histories against range(epochs) of its own
# constant, so with one epoch its constant must say 1 too.
SIZING = {
    "addition_rnn": [("TRAINING_SIZE = 50000", "TRAINING_SIZE = 2000"),
                     ("for iteration in range(1, 200):", "for iteration in range(1, 3):")],
    "reuters_mlp_relu_vs_selu": [("epochs = 40", "epochs = 1")],
}
_EPOCHS = re.compile(r"\bepochs(\s*)=(\s*)\d+")


class Unavailable(Exception):
    """The sdist could not be obtained (no network, no pip); the message says why."""


def fetch(cache: Path) -> Path:
    """The examples/ folder of the Keras 2.3.1 sdist, downloaded once into `cache`."""
    target = cache / f"keras-{VERSION}-examples"
    if all((target / f"{name}.py").is_file() for name in NAMES):
        return target
    download = cache / "sdist"
    download.mkdir(parents=True, exist_ok=True)
    archives = list(download.glob(f"[Kk]eras-{VERSION}.tar.gz"))
    if not archives:
        cmd = [sys.executable, "-m", "pip", "download", f"keras=={VERSION}", "--no-deps", "--no-binary", ":all:",
               "-d", str(download), "-q"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
        except subprocess.TimeoutExpired as e:
            raise Unavailable(f"the Keras {VERSION} sdist could not be downloaded from the package index in "
                              f"180 s") from e
        archives = list(download.glob(f"[Kk]eras-{VERSION}.tar.gz"))
        if proc.returncode != 0 or not archives:
            raise Unavailable(f"the Keras {VERSION} sdist could not be downloaded (pip download keras=={VERSION} "
                              f"--no-binary :all:): {proc.stderr.strip()[-300:]}")
    tmp = Path(tempfile.mkdtemp(dir=cache))
    with tarfile.open(archives[0]) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if len(parts) == 3 and parts[1] == "examples" and parts[2][:-3] in NAMES:
                member.name = parts[2]
                tar.extract(member, tmp, filter="data")
    tmp.replace(target) if not target.exists() else shutil.rmtree(tmp)
    return target


def sized_text(examples: Path, script: str, one_epoch: bool = False) -> str:
    """The script with SIZING's replacements (each must match exactly once); with `one_epoch`, every
    ``epochs = N`` / ``epochs=N`` also says 1 (a run of Keras itself, which has no -e flag)."""
    text = (examples / f"{script}.py").read_text()
    for old, new in SIZING.get(script, ()):
        if text.count(old) != 1:
            raise AssertionError(f"{script}.py: the sizing line {old!r} is not there exactly once")
        text = text.replace(old, new)
    if one_epoch:
        text = _EPOCHS.sub(lambda m: f"epochs{m.group(1)}={m.group(2)}1", text)
    return text


def sequences(rng, n: int, vocab: int, longest: int = 60) -> np.ndarray:
    """`n` word-index lists (an object array, as Keras' imdb / reuters files hold them)."""
    out = np.empty(n, dtype=object)
    for i in range(n):
        out[i] = [int(v) for v in rng.integers(1, vocab, rng.integers(5, longest))]
    return out


def write_datasets(folder: Path, mnist=(256, 320), cifar10=(128, 64), reuters=300, imdb=(200, 100),
                   longest: int = 60, seed: int = 0) -> dict[str, Path]:
    """Synthetic mnist / cifar10 / reuters / imdb .npz files (Keras' array names) with (train, test)
    sample counts; returns name -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    np.savez(folder / "mnist.npz", x_train=rng.integers(0, 255, (mnist[0], 28, 28), dtype=np.uint8),
             y_train=rng.integers(0, 10, mnist[0], dtype=np.uint8),
             x_test=rng.integers(0, 255, (mnist[1], 28, 28), dtype=np.uint8),
             y_test=rng.integers(0, 10, mnist[1], dtype=np.uint8))
    np.savez(folder / "cifar10.npz", x_train=rng.integers(0, 255, (cifar10[0], 32, 32, 3), dtype=np.uint8),
             y_train=rng.integers(0, 10, (cifar10[0], 1), dtype=np.uint8),
             x_test=rng.integers(0, 255, (cifar10[1], 32, 32, 3), dtype=np.uint8),
             y_test=rng.integers(0, 10, (cifar10[1], 1), dtype=np.uint8))
    np.savez(folder / "reuters.npz", x=sequences(rng, reuters, 2000, longest), y=rng.integers(0, 46, reuters))
    np.savez(folder / "imdb.npz", x_train=sequences(rng, imdb[0], 5000, longest), y_train=rng.integers(0, 2, imdb[0]),
             x_test=sequences(rng, imdb[1], 5000, longest), y_test=rng.integers(0, 2, imdb[1]))
    return {p.stem: p for p in folder.glob("*.npz")}
