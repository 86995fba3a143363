"""Shared by the tests that compare a TensorFlow call mapped under the runner with TensorFlow's own
(test_tf_*_ops_tf.py): a dotted path under a `tf` module, an eager call's tensor, dtype, shape and
values against TensorFlow's, and a script's JSON result under `python -m flexflow_keras` or plain Python."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from flexflow_keras.ops.eager_tensor import EagerTensor


def plain(value):
    """Nested dicts, tuples and lists of arrays as plain Python lists and dicts (for equality checks)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    return np.asarray(value).tolist()


def tf_function(root, path: str):
    """`root.<path>` for a dotted path ("math.cumsum")."""
    for part in path.split("."):
        root = getattr(root, part)
    return root


def check_eager_call(tf, fftf, path: str, args, kwargs, rtol: float = 0.0, atol: float = 0.0):
    """tf.<path>(*args, **kwargs) under the runner (`fftf`) gives a tensor with .numpy(), of TensorFlow's
    dtype and shape, with TensorFlow's values (exactly, or within rtol / atol)."""
    want = tf_function(tf, path)(*args, **kwargs)
    got = tf_function(fftf, path)(*args, **kwargs)
    assert isinstance(got, EagerTensor), f"tf.{path} gave {type(got).__name__}, not a tensor with .numpy()"
    assert got.numpy().dtype == want.dtype.as_numpy_dtype and got.shape == tuple(want.shape)
    if rtol or atol:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got.numpy(), want.numpy())


ROOT = Path(__file__).resolve().parents[2]


def run_script(script: Path, runner: bool, timeout: int = 300) -> dict:
    """The JSON object `script` prints last, run under `python -m flexflow_keras` (`runner`) or as plain
    Python (TensorFlow's own keras), in the script's folder, with this checkout first on the path."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TF_CPP_MIN_LOG_LEVEL="3")
    command = [sys.executable] + (["-m", "flexflow_keras"] if runner else []) + [str(script)]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, cwd=script.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
