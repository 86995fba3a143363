"""A functional model trained on its layers' added loss alone (keras.io's CTC endpoint layer: the labels are a
model input, compile() has no loss) from a tf.data dataset of input dicts, with no y. Two bugs stopped it:
every batch after the first came without the placeholder labels the first got (the loader failed: 'cannot do
a non-empty take from an empty axes'), and with an open-length label input (``Input(shape=(None,))``) the
graph recorded at the data's length lost the added loss ('needs labels y'). Compared with TensorFlow 2.21
from the same weights, fixed and open lengths, arrays and a dataset."""

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from tests.flexflow_keras.tf_compare import run_script  # noqa: E402

pytestmark = pytest.mark.tf

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



def test_added_loss_without_labels_trains_as_tensorflow(tmp_path):
    script = tmp_path / "added_loss.py"
    script.write_text(SCRIPT)
    got, want = run_script(script, runner=True), run_script(script, runner=False)
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6, err_msg=key)
