"""`isinstance(ds, tf.data.Dataset)` under `python -m flexflow_keras` answers as TensorFlow 2.21 does for the
datasets scripts build (from_tensor_slices and its chain, range, TextLineDataset, make_csv_dataset, the
Keras directory loaders, timeseries_dataset_from_array), and False for arrays and lists. Scripts check it
before batching or to tell a dataset from arrays (TensorFlow's custom training walkthrough copy asserted the
split); `tf.data.Dataset` was a raw-TensorFlow path, so isinstance raised TypeError ("arg 2 must be a
type"). `tf.data.Dataset.from_tensor_slices(...)` and the other constructors still resolve through it."""

import numpy as np
import pytest

from flexflow_keras.keras_alias import _TensorFlow

pytest.importorskip("tensorflow")

from tests.flexflow_keras.tf_compare import run_script  # noqa: E402

pytestmark = pytest.mark.tf

SCRIPT = """
import json, os
import numpy as np
import tensorflow as tf

os.makedirs("imgs/a", exist_ok=True); os.makedirs("imgs/b", exist_ok=True)
os.makedirs("texts/a", exist_ok=True); os.makedirs("texts/b", exist_ok=True)
for c in "ab":
    for i in range(2):
        tf.keras.utils.save_img(f"imgs/{c}/{i}.png", np.full((4, 4, 3), 40 * i, "uint8"))
        open(f"texts/{c}/{i}.txt", "w").write(f"text {c} {i}")
open("rows.csv", "w").write("a,b\\n1,2\\n3,4\\n")
ds = tf.data.Dataset.from_tensor_slices((np.ones((6, 2), "float32"), np.arange(6)))
candidates = {
    "slices": ds,
    "chain": ds.shuffle(6).batch(2).map(lambda x, y: (x * 2, y)).prefetch(tf.data.AUTOTUNE),
    "take_skip": ds.take(2).concatenate(ds.skip(4)),
    "range": tf.data.Dataset.range(3),
    "lines": tf.data.TextLineDataset("rows.csv"),
    "csv": tf.data.experimental.make_csv_dataset("rows.csv", 2, num_epochs=1),
    "images": tf.keras.utils.image_dataset_from_directory("imgs", image_size=(4, 4), batch_size=2),
    "images_mapped": tf.keras.utils.image_dataset_from_directory("imgs", image_size=(4, 4)).map(
        lambda x, y: (x / 255.0, y)),
    "texts": tf.keras.utils.text_dataset_from_directory("texts", batch_size=2),
    "series": tf.keras.utils.timeseries_dataset_from_array(np.arange(10.0), None, 3),
    "array": np.ones(3), "list": [1, 2], "none": None, "dict": {"a": 1},
}
out = {k: isinstance(v, tf.data.Dataset) for k, v in candidates.items()}
out["tuple_form"] = isinstance(ds, (np.ndarray, tf.data.Dataset))
out["subclass"] = issubclass(type(ds), tf.data.Dataset)
out["subclass_no"] = issubclass(int, tf.data.Dataset)
print(json.dumps(out))
"""


def test_dataset_isinstance_as_tf(tmp_path):
    script = tmp_path / "isinstance_dataset.py"
    script.write_text(SCRIPT)
    theirs = run_script(script, runner=False)
    ours = run_script(script, runner=True)
    assert ours == theirs
    assert theirs["chain"] and not theirs["array"]


def test_dataset_path_keeps_its_constructors():
    tf = _TensorFlow("tensorflow")
    ds = tf.data.Dataset.from_tensor_slices(np.arange(4)).batch(2)
    assert isinstance(ds, tf.data.Dataset)
    assert [list(b) for b in ds] == [[0, 1], [2, 3]]
    assert not isinstance(np.arange(4), tf.data.Dataset)
