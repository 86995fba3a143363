"""The iterators of `ImageDataGenerator` (`flow`, `flow_from_directory`) are `keras.utils.PyDataset`s, as in
tf.keras 3.15 (its legacy `Iterator` subclasses PyDataset), so `fit` passes over them again each epoch. With
`steps_per_epoch` a pass continues across epochs and an epoch that runs out of batches ends early, the next
one starting a new pass. The C1 W4 horse-or-human labs fit a flow_from_directory of 9 batches with
steps_per_epoch=8 for 15 epochs: TensorFlow trains 8, 1, 8, 1, ... steps; ours took the iterator for a
one-shot generator (it has `__next__`) and stopped after epoch 2 ("Your input ran out of data")."""

import pytest

pytest.importorskip("tensorflow")

from tests.flexflow_keras.tf_compare import run_script  # noqa: E402

pytestmark = pytest.mark.tf

SCRIPT = """
import json, os
import numpy as np
import tensorflow as tf
from tensorflow.keras.preprocessing.image import ImageDataGenerator

rng = np.random.default_rng(0)
for c in ("a", "b"):
    os.makedirs(f"imgs/{c}", exist_ok=True)
    for i in range(10):
        tf.keras.utils.save_img(f"imgs/{c}/{i}.png", rng.integers(0, 255, (6, 6, 3)).astype("uint8"), scale=False)


class Steps(tf.keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.steps = []

    def on_epoch_begin(self, epoch, logs=None):
        self.steps.append(0)

    def on_train_batch_end(self, batch, logs=None):
        self.steps[-1] += 1


def model():
    m = tf.keras.Sequential([tf.keras.Input((6, 6, 3)), tf.keras.layers.Flatten(),
                             tf.keras.layers.Dense(1, activation="sigmoid", kernel_initializer="ones",
                                                   bias_initializer=tf.keras.initializers.Constant(-50.0))])
    m.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="binary_crossentropy")
    return m


out = {}
folder = ImageDataGenerator(rescale=1 / 255).flow_from_directory("imgs", target_size=(6, 6), batch_size=3,
                                                                  class_mode="binary", shuffle=False)
out["is_pydataset"] = isinstance(folder, tf.keras.utils.PyDataset)
out["len"] = len(folder)
m, steps = model(), Steps()
h = m.fit(folder, steps_per_epoch=5, epochs=4, verbose=0, shuffle=False, callbacks=[steps])
out["folder_steps"], out["folder_loss"] = steps.steps, h.history["loss"]
m, steps = model(), Steps()
h = m.fit(folder, epochs=2, verbose=0, shuffle=False, callbacks=[steps])
out["folder_plain_steps"], out["folder_plain_loss"] = steps.steps, h.history["loss"]
x = rng.random((10, 6, 6, 3)).astype("float32")
y = (np.arange(10) % 2).astype("float32")
arrays = ImageDataGenerator().flow(x, y, batch_size=4, shuffle=False)
out["flow_is_pydataset"] = isinstance(arrays, tf.keras.utils.PyDataset)
m, steps = model(), Steps()
h = m.fit(arrays, steps_per_epoch=2, epochs=3, verbose=0, shuffle=False, callbacks=[steps],
          validation_data=ImageDataGenerator().flow(x, y, batch_size=5, shuffle=False), validation_steps=2)
out["flow_steps"], out["flow_loss"], out["flow_val"] = steps.steps, h.history["loss"], h.history["val_loss"]
out["evaluate"] = m.evaluate(arrays, verbose=0)
out["predict"] = m.predict(arrays, verbose=0).ravel().tolist()
print(json.dumps(out))
"""


def test_image_iterators_are_pydatasets(tmp_path):
    script = tmp_path / "image_iterator_pydataset.py"
    script.write_text(SCRIPT)
    theirs = run_script(script, runner=False)
    ours = run_script(script, runner=True)
    assert theirs["folder_steps"] == [5, 2, 5, 2] and theirs["is_pydataset"]
    for key in ("is_pydataset", "len", "folder_steps", "folder_plain_steps", "flow_is_pydataset", "flow_steps"):
        assert ours[key] == theirs[key], key
    for key in ("folder_loss", "folder_plain_loss", "flow_loss", "flow_val", "evaluate", "predict"):
        assert ours[key] == pytest.approx(theirs[key], rel=1e-5, abs=1e-6), key
