"""The runtime demo script runs, checks itself against NumPy and exits 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_runtime_demo_exits_zero():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "runtime_demo.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "step 4" in proc.stdout and "replayed from the trace" in proc.stdout
