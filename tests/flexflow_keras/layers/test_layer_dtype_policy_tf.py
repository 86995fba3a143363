"""Every layer answers `dtype_policy` as tf.keras 3.15 does: the policy of its dtype (an InputLayer's is the
global policy, its `dtype` the input's). ZTM's TensorFlow course (notebook 07, Food Vision) prints
``layer.name, layer.trainable, layer.dtype, layer.dtype_policy`` for a model's layers and for its
EfficientNetB0's; ours had no `dtype_policy` ("'InputLayer' object has no attribute 'dtype_policy'")."""

import pytest

pytest.importorskip("tensorflow")

from tests.flexflow_keras.tf_compare import run_script  # noqa: E402

pytestmark = pytest.mark.tf

SCRIPT = """
import json
import tensorflow as tf
from tensorflow.keras import layers

inputs = layers.Input(shape=(8,), name="x")
ids = layers.Input(shape=(4,), dtype="int32", name="ids")
h = layers.Dense(3, name="d32")(inputs)
e = layers.GlobalAveragePooling1D(name="pool")(layers.Embedding(10, 3, name="emb")(ids))
h = layers.Concatenate(name="cat")([h, e])
out = layers.Activation("softmax", dtype="float32", name="softmax_float32")(h)
model = tf.keras.Model([inputs, ids], out)
wide = layers.Dense(2, dtype="float64", name="d64")
wide.build((None, 3))
rows = [[l.name, l.dtype, repr(l.dtype_policy), l.dtype_policy.name, l.dtype_policy.compute_dtype,
         l.dtype_policy.variable_dtype] for l in model.layers + [wide]]
print(json.dumps(rows))
"""


def test_layer_dtype_policy_as_tf_keras(tmp_path):
    script = tmp_path / "dtype_policy.py"
    script.write_text(SCRIPT)
    theirs = run_script(script, runner=False)
    ours = run_script(script, runner=True)
    assert ["ids", "int32", '<DTypePolicy "float32">', "float32", "float32", "float32"] in theirs
    assert sorted(ours) == sorted(theirs)
