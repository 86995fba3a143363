"""`flow_from_directory` and `flow_from_dataframe` resize each image as tf.keras 3.15's legacy iterators do:
with `keras.utils.load_img`, i.e. Pillow's `Image.resize` and its filter for `interpolation` ("nearest"
default, "bilinear", "bicubic", "lanczos", "box", "hamming"). Ours resized "nearest" and "bilinear" as
`tf.image.resize` does (image_dataset_from_directory's loader): Pillow's nearest picks the source pixel from
a double-precision centre, tf.image.resize's from a float32 one, so a 128-row image shrunk to 100 rows took
row 15 for row 12 instead of row 16 (the C1 W4 horse-or-human lab's flow_from_directory batches differed in
3 of 12 images by up to 137/255, and the losses by 5e-5 from the same weights); bilinear differed everywhere
(Pillow's antialiases); "lanczos", "box" and "hamming" were refused."""

import pytest

pytest.importorskip("tensorflow")

from tests.flexflow_keras.tf_compare import run_script  # noqa: E402

pytestmark = pytest.mark.tf

SCRIPT = """
import json, os
import numpy as np
import pandas as pd
import tensorflow as tf
from tensorflow.keras.preprocessing.image import ImageDataGenerator

rng = np.random.default_rng(0)
sizes = [(128, 122), (110, 128), (63, 87), (100, 100), (37, 211)]
for c in ("a", "b"):
    os.makedirs(f"imgs/{c}", exist_ok=True)
    for i, (h, w) in enumerate(sizes):
        tf.keras.utils.save_img(f"imgs/{c}/{i}.png", rng.integers(0, 255, (h, w, 3)).astype("uint8"), scale=False)
out = {}
for interpolation in ("nearest", "bilinear", "bicubic", "lanczos", "box", "hamming"):
    for color_mode, size in (("rgb", (100, 100)), ("grayscale", (47, 150))):
        gen = ImageDataGenerator().flow_from_directory("imgs", target_size=size, color_mode=color_mode,
                                                       batch_size=10, shuffle=False, interpolation=interpolation)
        x, y = gen[0]
        out[f"{interpolation}/{color_mode}"] = [x.shape, x.dtype.name, x.astype("float64").ravel()[::7].tolist()]
frame = pd.DataFrame({"filename": [f"a/{i}.png" for i in range(5)], "class": ["x", "y", "x", "y", "x"]})
gen = ImageDataGenerator(rescale=1 / 255).flow_from_dataframe(frame, "imgs", target_size=(100, 100), batch_size=5,
                                                              shuffle=False, class_mode="binary")
x, y = gen[0]
out["dataframe"] = [x.shape, x.astype("float64").ravel()[::7].tolist(), y.tolist()]
print(json.dumps(out))
"""


def test_flow_from_directory_resizes_as_load_img(tmp_path):
    script = tmp_path / "flow_resize.py"
    script.write_text(SCRIPT)
    theirs = run_script(script, runner=False)
    ours = run_script(script, runner=True)
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        assert ours[key][:-1] == theirs[key][:-1], key
        assert ours[key][-1] == pytest.approx(theirs[key][-1], abs=1e-5), key
