"""examples/imdb_lstm.py (Embedding + LSTM + Dense sigmoid, Keras 2.3.1's imdb_lstm shape) fits one epoch on
small synthetic data from the command line, with Embedding(mask_zero=True) (the unmasked model is covered by
the layer tests)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_imdb_lstm_script_fits_one_epoch(tmp_path):
    args = ["-e", "1", "--samples", "160", "--maxlen", "12", "--max-features", "100", "--units", "8",
            "--only-data-parallel", "--mask-zero"]
    env = dict(os.environ, PYTHONUNBUFFERED="1", HOME=str(tmp_path))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "imdb_lstm.py"), *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    acc = float(proc.stdout.strip().split("Test accuracy:")[-1])
    assert 0.0 <= acc <= 1.0
    assert "-e/--epochs 1 on the command line overrides the script's epochs=15" in proc.stderr, proc.stderr[-2000:]
