"""`ds.apply(tf.data.experimental.snapshot(path))` and `ds.snapshot(path)` under `python -m flexflow_keras` gives the elements
TensorFlow 2.21 gives (TensorFlow's CSV tutorial snapshots its parsed CSV dataset, then shuffles, repeats and
iterates it); it was refused as raw TensorFlow. Here it is the dataset's `cache()`: the same elements in the
same order, read again from memory (TensorFlow also writes them under `path` for other processes)."""

import pytest

pytest.importorskip("tensorflow")

from tests.flexflow_keras.tf_compare import run_script  # noqa: E402

pytestmark = pytest.mark.tf

SCRIPT = """
import json
import numpy as np
import tensorflow as tf

ds = tf.data.Dataset.from_tensor_slices({"a": np.arange(10.0), "b": np.arange(10) * 2}).batch(3)
snap = ds.apply(tf.data.experimental.snapshot("snap.tfsnap"))
first = [[float(v) for v in b["a"]] for b in snap]
second = [[int(v) for v in b["b"]] for b in snap]
gz = ds.apply(tf.data.experimental.snapshot("snap_gz", compression="GZIP"))
n = sum(int(b["a"].shape[0]) for b in gz.shuffle(10).repeat(3))
method = [[float(v) for v in b["a"]] for b in ds.map(lambda e: e).snapshot("snap_method")]
import os
for c in "xy":
    os.makedirs(f"imgs/{c}", exist_ok=True)
    tf.keras.utils.save_img(f"imgs/{c}/0.png", np.full((4, 4, 3), 50 if c == "x" else 200, "uint8"))
images = tf.keras.utils.image_dataset_from_directory("imgs", image_size=(4, 4), batch_size=2, shuffle=False)
pixels = [float(x.numpy().sum()) for x, y in images.apply(tf.data.experimental.snapshot("snap_img"))]
print(json.dumps({"first": first, "second": second, "n": n, "method": method, "pixels": pixels}))
"""


def test_snapshot_as_tf(tmp_path):
    script = tmp_path / "snapshot_dataset.py"
    script.write_text(SCRIPT)
    ours = run_script(script, runner=True)
    assert ours == run_script(script, runner=False)
    assert ours["n"] == 30
