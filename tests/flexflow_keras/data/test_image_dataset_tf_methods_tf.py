"""`image_dataset_from_directory`'s dataset answers tf.data's other methods as TensorFlow 2.21 does, through a
tf.data-like view of its batches: ZTM's TensorFlow course (notebook 06, scaling up) collects the test labels
with ``for images, labels in test_data.unbatch()`` and the paths with ``test_data.list_files(pattern,
shuffle=False)``; ours stopped with "'ImageDataset' object has no attribute 'unbatch'"."""

import pytest

pytest.importorskip("tensorflow")

from tests.flexflow_keras.tf_compare import run_script  # noqa: E402

pytestmark = pytest.mark.tf

SCRIPT = """
import json, os
import numpy as np
import tensorflow as tf

for c, n in (("a", 5), ("b", 4)):
    os.makedirs(f"imgs/{c}", exist_ok=True)
    for i in range(n):
        tf.keras.utils.save_img(f"imgs/{c}/{i}.png", np.full((4, 4, 3), 10 * i + (100 if c == "b" else 0), "uint8"),
                                scale=False)
ds = tf.keras.utils.image_dataset_from_directory("imgs", image_size=(4, 4), batch_size=4, shuffle=False,
                                                 label_mode="categorical")
rows = [(float(x.numpy().mean()), int(y.numpy().argmax())) for x, y in ds.unbatch()]
rebatched = [x.shape[0] for x, y in ds.unbatch().batch(3)]
mapped = [float(x.numpy().max()) for x, y in ds.map(lambda x, y: (x / 255.0, y)).unbatch()]
shuffled = tf.keras.utils.image_dataset_from_directory("imgs", image_size=(4, 4), batch_size=2, seed=1)
shuffled_rows = sorted(float(x.numpy().mean()) for x, y in shuffled.unbatch())
single = tf.keras.utils.image_dataset_from_directory("imgs", image_size=(4, 4), batch_size=None, shuffle=False)
spec = ds.element_spec
files = [os.path.relpath(f.numpy().decode()) for f in ds.list_files("imgs/*/*.png", shuffle=False)]
try:
    ds.no_such_method
    missing = "none"
except AttributeError:
    missing = "AttributeError"
print(json.dumps({
    "rows": rows,
    "rebatched": rebatched,
    "mapped": mapped,
    "shuffled_rows": shuffled_rows,
    "enumerate": [int(i) for i, _ in ds.enumerate()],
    "filter": len(list(ds.unbatch().filter(lambda x, y: tf.reduce_mean(x) > 50.0))),
    "single_batch": [x.shape[0] for x in single.map(lambda x, y: x).batch(4)],
    "spec": [list(spec[0].shape), list(spec[1].shape)],
    "files": files,
    "missing": missing,
}))
"""


def test_image_dataset_tf_data_methods_as_tf(tmp_path):
    script = tmp_path / "image_dataset_methods.py"
    script.write_text(SCRIPT)
    theirs = run_script(script, runner=False)
    ours = run_script(script, runner=True)
    assert theirs["rebatched"] == [3, 3, 3] and theirs["missing"] == "AttributeError"
    assert ours == theirs
