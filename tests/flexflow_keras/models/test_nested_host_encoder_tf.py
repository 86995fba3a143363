"""A model that starts with host preprocessing (a sentence encoder: string Input -> TextVectorization ->
Embedding -> pooling) nests as tf.keras 3.15's: called on another string Input its input is checked against
the declared string input, and ``Model([token_model.input, ...], ...)`` takes the strings, since
`token_model.input` is the declared Input. ZTM's TensorFlow course notebook 09 (SkimLit) builds its
token/char hybrid so; ours stopped with "Input 0 of layer 'universal_sentence_encoder' is incompatible:
expected shape (None, 30), got shape (None,)" and then "Input 'text_vectorization_1' ... expects samples of
shape (4,), received ()". Both frameworks start from the weights the TensorFlow run saves."""

import pytest

pytest.importorskip("tensorflow")

from tests.flexflow_keras.tf_compare import run_script  # noqa: E402

pytestmark = pytest.mark.tf

SCRIPT = """
import json, sys
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

s = np.array(["a b c", "b c d", "c d e", "a a b", "e d a", "b b"], dtype=object)
vec = layers.TextVectorization(max_tokens=20, output_sequence_length=4)
vec.adapt(s)
e_in = layers.Input(shape=(), dtype="string")
enc = tf.keras.Model(e_in, layers.GlobalAveragePooling1D()(layers.Embedding(20, 3)(vec(e_in))), name="encoder")
enc.trainable = False
ti = layers.Input(shape=[], dtype=tf.string, name="token_input")
tm = tf.keras.Model(ti, layers.Dense(2)(enc(ti)))
ci = layers.Input(shape=(2,), name="num")
out = layers.Dense(1)(layers.Concatenate()([tm.output, ci]))
m = tf.keras.Model([tm.input, ci], out)
if "flexflow_keras" in sys.modules:
    w = np.load("w.npz")
    m.set_weights([w[f"arr_{i}"] for i in range(len(w.files))])
else:
    np.savez("w.npz", *m.get_weights())
m.compile(loss="mse", optimizer="sgd")
num = np.arange(12, dtype="float32").reshape(6, 2) / 10
y = np.arange(6, dtype="float32") / 6
ds = tf.data.Dataset.zip((tf.data.Dataset.from_tensor_slices((s, num)), tf.data.Dataset.from_tensor_slices(y))).batch(3)
before = m.predict(ds, verbose=0)
hist = m.fit(ds, epochs=2, verbose=0)
print(json.dumps({
    "input_dtype": str(tm.input.dtype).replace("<dtype: '", "").replace("'>", ""),
    "input_shape": list(tm.input.shape),
    "enc_out": list(enc(ti).shape),
    "before": np.round(before, 5).ravel().tolist(),
    "loss": np.round(hist.history["loss"], 5).tolist(),
}))
"""


def test_nested_string_encoder_as_tf_keras(tmp_path):
    script = tmp_path / "nested_encoder.py"
    script.write_text(SCRIPT)
    theirs = run_script(script, runner=False)
    ours = run_script(script, runner=True)
    assert theirs["input_shape"] == [None]
    assert ours == theirs
