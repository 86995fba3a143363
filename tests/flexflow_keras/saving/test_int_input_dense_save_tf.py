"""A Dense on an int32 Input (SkimLit's one-hot line numbers, ZTM's TensorFlow course notebook 09) casts its
input inside its own call, as tf.keras 3.15: the model's layers are the Input and the Dense (no separate
'cast' layer) and it saves to .keras and loads with the same predictions. Ours recorded the cast as a layer of
the model and model.save stopped with "applies the op Cast directly to symbolic tensors (layer 'cast')"."""

import pytest

pytest.importorskip("tensorflow")

from tests.flexflow_keras.tf_compare import run_script  # noqa: E402

pytestmark = pytest.mark.tf

SCRIPT = """
import json, sys
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

line_number_inputs = layers.Input(shape=(15,), dtype=tf.int32, name="line_number_input")
x = layers.Dense(4, activation="relu")(line_number_inputs)
other = layers.Input(shape=(3,), name="other")
z = layers.Concatenate()([x, layers.Dense(2)(other)])
model = tf.keras.Model([line_number_inputs, other], layers.Dense(1)(z))
if "flexflow_keras" in sys.modules:
    w = np.load("w.npz")
    model.set_weights([w[f"arr_{i}"] for i in range(len(w.files))])
else:
    np.savez("w.npz", *model.get_weights())
data = [np.eye(15, dtype="int32")[[0, 3, 7]], np.arange(9, dtype="float32").reshape(3, 3) / 9]
before = model.predict(data, verbose=0)
model.save("m.keras")
loaded = tf.keras.models.load_model("m.keras")
print(json.dumps({
    "layers": [type(l).__name__ for l in model.layers],
    "loaded_layers": [type(l).__name__ for l in loaded.layers],
    "input_dtype": str(loaded.inputs[0].dtype).replace("<dtype: '", "").replace("'>", ""),
    "before": np.round(before, 5).ravel().tolist(),
    "after": np.round(loaded.predict(data, verbose=0), 5).ravel().tolist(),
}))
"""


def test_dense_on_int_input_saves_as_tf_keras(tmp_path):
    script = tmp_path / "int_input_dense.py"
    script.write_text(SCRIPT)
    theirs = run_script(script, runner=False)
    ours = run_script(script, runner=True)
    assert "Cast" not in theirs["layers"]
    assert ours == theirs
