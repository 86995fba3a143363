"""`python -m flexflow_keras SCRIPT.py`: an unmodified tf.keras / Keras script runs with keras,
tensorflow.keras and tf.keras mapped onto flexflow_keras; raw TensorFlow calls fail with one clean message
naming the call; flags after the script reach the script and our parser."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import argparse
    import sys

    import numpy as np
    import tensorflow as tf
    from tensorflow import keras
    from tensorflow.keras import layers
    import keras as plain_keras
    from keras.layers.core import Dense
    from keras.utils.np_utils import to_categorical
    from keras.engine.topology import Layer as Keras2Layer  # Keras 2 custom-layer scripts
    from tensorflow.python.keras.layers import Dense as OldTfDense  # older tf.keras scripts

    import flexflow_keras

    parser = argparse.ArgumentParser()
    parser.add_argument("--units", type=int, default=3)
    parser.add_argument("--raw", action="store_true")
    parser.add_argument("--missing", action="store_true")
    args = parser.parse_args()
    assert keras is flexflow_keras and plain_keras is flexflow_keras and tf.keras is flexflow_keras
    assert layers is flexflow_keras.layers and Dense is flexflow_keras.layers.Dense
    assert tf.float32 == "float32"
    assert keras.backend.backend() == keras.config.backend() == "tensorflow"  # backend-agnostic scripts' tf branch
    assert Keras2Layer is flexflow_keras.layers.Layer and OldTfDense is Dense
    assert tf.optimizers.Adam is flexflow_keras.optimizers.Adam and tf.losses is flexflow_keras.losses  # TF2 aliases
    if args.missing:
        import keras.no_such_module  # noqa: F401
    model = keras.Sequential([keras.Input((4,)), Dense(args.units, activation="softmax")])
    model.compile(keras.optimizers.Nadam(lr=0.01), "categorical_crossentropy")
    rng = np.random.default_rng(0)
    x = rng.random((32, 4)).astype("float32")
    y = to_categorical(rng.integers(0, args.units, 32), args.units)
    history = model.fit(x, y, epochs=5, batch_size=8, verbose=0)
    print("EPOCHS", len(history.history["loss"]), "UNITS", args.units)
    from packaging.version import Version

    assert Version(tf.__version__).release[0] == 2 and "flexflow" in tf.__version__  # notebooks check >= 2
    # scripts branch on Keras 3 (Version(keras.__version__).major >= 3): the Keras API we follow, ours as label
    assert keras.__version__ == tf.keras.__version__ == keras.version() == plain_keras.version()
    assert Version(keras.__version__).major == 3 and Version(keras.__version__).local.startswith("flexflow")
    assert tf.__version__.endswith(Version(keras.__version__).local.split(".", 1)[1])  # ours, in both labels
    if args.raw:
        with tf.GradientTape() as tape:  # a tape may be entered (a traced train_step enters one) ...
            pass
        print("SUM", float(tf.reduce_sum(x)))  # TensorFlow math with a keras.ops twin runs as it ...
        tf.nn.ctc_loss(x, x, None, None)  # ... one whose arguments differ from Keras' (ctc_loss's) is refused
""")


def _run(tmp_path, *args):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, FF_LOG_LEVEL="WARNING", HOME=str(tmp_path))
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "flexflow_keras", str(script), *args], capture_output=True,
                          text=True, timeout=240, env=env, cwd=str(tmp_path))


def test_runner_maps_keras_and_tf_keras_and_passes_flags(tmp_path):
    proc = _run(tmp_path, "-e", "2", "--units", "4")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "EPOCHS 2 UNITS 4" in proc.stdout  # -e overrode epochs=5; --units reached the script's argparse


def test_raw_tensorflow_call_names_itself(tmp_path):
    proc = _run(tmp_path, "-e", "1", "--raw")
    assert proc.returncode == 1
    assert "SUM" in proc.stdout
    assert "flexflow_keras: error: tf.nn.ctc_loss: raw TensorFlow is not supported" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_keras_module_names_both_paths(tmp_path):
    proc = _run(tmp_path, "--missing")
    assert proc.returncode == 1
    assert "keras.no_such_module" in proc.stderr and "flexflow_keras.no_such_module" in proc.stderr


def test_usage_errors(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "flexflow_keras"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2 and "usage: python -m flexflow_keras SCRIPT.py" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "flexflow_keras", str(tmp_path / "nope.py")], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 2 and "no such script" in proc.stderr
