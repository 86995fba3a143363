"""A custom training loop under `python -m flexflow_keras` that uses the newly mapped raw TensorFlow calls
(tf.gather_nd with batch_dims in the loss, tf.clip_by_global_norm on the gradients, tf.math.in_top_k,
tf.math.confusion_matrix, tf.unique_with_counts, tf.scatter_nd, tf.tensor_scatter_nd_add, tf.linalg.trace)
gives the numbers the same script gives under TensorFlow 2.21, from the same starting weights."""

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from tests.flexflow_keras.tf_compare import run_script  # noqa: E402

pytestmark = pytest.mark.tf

SCRIPT = """
import json
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = rng.normal(size=(64, 5)).astype("float32")
y = ((x[:, 0] + x[:, 1] > 0).astype("int32") + (x[:, 2] > 1).astype("int32"))
model = tf.keras.Sequential([tf.keras.Input((5,)), tf.keras.layers.Dense(8, activation="relu"),
                             tf.keras.layers.Dense(3)])
model.set_weights([rng.normal(scale=0.5, size=w.shape).astype("float32") for w in model.get_weights()])
optimizer = tf.keras.optimizers.SGD(0.5)


def loss_fn(labels, logits):
    picked = tf.gather_nd(tf.nn.log_softmax(logits), tf.expand_dims(labels, -1), batch_dims=1)
    return -tf.reduce_mean(picked)


losses, norms = [], []
for step in range(6):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    grads, norm = tf.clip_by_global_norm(grads, 1.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    losses.append(float(loss))
    norms.append(float(norm))

logits = model(x)
pred = tf.argmax(logits, axis=1)
matrix = tf.math.confusion_matrix(y, pred, num_classes=3)
values, idx, counts = tf.unique_with_counts(y)
hits = tf.math.in_top_k(y, logits, 2)
first = tf.scatter_nd(tf.stack([tf.range(4), y[:4]], axis=1), tf.ones([4]), [4, 3])
bumped = tf.tensor_scatter_nd_add(tf.zeros([3, 3]), tf.stack([y, tf.cast(pred, tf.int32)], axis=1), tf.ones([64]))
print(json.dumps({"losses": losses, "norms": norms, "matrix": matrix.numpy().tolist(),
                  "matrix_dtype": matrix.dtype.name, "values": values.numpy().tolist(), "idx": idx.numpy()[:8].tolist(),
                  "counts": counts.numpy().tolist(), "hits": int(tf.reduce_sum(tf.cast(hits, tf.int32))),
                  "first": first.numpy().tolist(), "trace": float(tf.linalg.trace(bumped))}))
"""



def test_custom_training_loop_matches_tensorflow(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(SCRIPT)
    got, want = run_script(script, runner=True), run_script(script, runner=False)
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-4)
    np.testing.assert_allclose(got["norms"], want["norms"], rtol=1e-4)
    assert want["norms"][0] > 1.0  # the clipping mattered
    for key in ("matrix", "matrix_dtype", "values", "idx", "counts", "hits", "first", "trace"):
        assert got[key] == want[key], key
