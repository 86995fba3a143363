"""A functional model trained on its layers' added loss alone (keras.io's CTC endpoint layer: the labels are a
model input, compile() has no loss) from a tf.data dataset of input dicts, with no y. Two bugs stopped it:
every batch after the first came without the placeholder labels the first got (the loader failed: 'cannot do
a non-empty take from an empty axes'), and with an open-length label input (``Input(shape=(None,))``) the
graph recorded at the data's length lost the added loss ('needs labels y'). Compared with TensorFlow 2.21
from the same weights, fixed and open lengths, arrays and a dataset."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorflow")
pytestmark = pytest.mark.tf
ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import json, sys
import numpy as np
import tensorflow as tf
import keras


class Endpoint(keras.layers.Layer):
    def call(self, y_true, y_pred):
        target = tf.reduce_mean(tf.cast(y_true, "float32"), axis=1, keepdims=True)
        self.add_loss(tf.reduce_mean(tf.square(y_pred[:, :1] - target)))
        return y_pred


out = {}
for shape in ["fixed", "open"]:
    for source in ["arrays", "dataset"]:
        image = keras.Input((3,), name="image")
        label = keras.Input((None,) if shape == "open" else (4,), name="label")
        pred = keras.layers.Dense(2, name="dense")(image)
        model = keras.Model([image, label], Endpoint(name="endpoint")(label, pred))
        model.compile(optimizer=keras.optimizers.SGD(0.1))
        model.set_weights([np.array([[0.5, -0.2], [0.1, 0.3], [-0.4, 0.2]], "float32"), np.zeros(2, "float32")])
        rng = np.random.default_rng(0)
        x = {"image": rng.normal(size=(12, 3)).astype("float32"),
             "label": rng.integers(0, 5, (12, 4)).astype("float32")}
        data = tf.data.Dataset.from_tensor_slices(x).batch(4) if source == "dataset" else x
        kwargs = {} if source == "dataset" else {"batch_size": 4, "shuffle": False}
        history = model.fit(data, epochs=2, verbose=0, **kwargs)
        out[shape + "_" + source] = history.history["loss"] + model.get_weights()[0].ravel().tolist()
print(json.dumps(out))
"""


def _run(script: Path, runner: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TF_CPP_MIN_LOG_LEVEL="3")
    command = [sys.executable] + (["-m", "flexflow_keras"] if runner else []) + [str(script)]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, cwd=script.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_added_loss_without_labels_trains_as_tensorflow(tmp_path):
    script = tmp_path / "added_loss.py"
    script.write_text(SCRIPT)
    got, want = _run(script, runner=True), _run(script, runner=False)
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6, err_msg=key)
