"""`import tensorflow.experimental.numpy as tnp` under `python -m flexflow_keras` (keras.io's "Writing Keras
models with TensorFlow NumPy"): a subclassed model and layers written with tnp, a tnp loss, and the default
`tf.distribute` strategy train to the numbers TensorFlow 2.21 gives from the same weights. Before, the import
stopped the script ("'tensorflow.experimental' is not a package"), and tf.distribute.get_strategy was refused."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.keras_alias import RawTensorFlowError  # noqa: E402
from tests.flexflow_keras.tf_compare import run_script  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")

SCRIPT = """
import json
import numpy as np
import tensorflow as tf
import tensorflow.experimental.numpy as tnp
import keras

rng = np.random.default_rng(0)
x = rng.uniform(0, 3, (48, 5)).astype("float32")
y = (x @ rng.uniform(0, 1, 5) + 1).astype("float32")


class TNPNet(keras.Model):
    def build(self, input_shape):
        self.w1 = self.add_weight(shape=(input_shape[1], 4), initializer="glorot_normal", name="w1")
        self.b1 = self.add_weight(shape=(4,), initializer="zeros", name="b1")
        self.w2 = self.add_weight(shape=(4, 1), initializer="glorot_normal", name="w2")

    def call(self, inputs):
        h = tnp.maximum(tnp.matmul(inputs, self.w1) + self.b1, 0.0)
        return tnp.matmul(h, self.w2)


class TNPDense(keras.layers.Layer):
    def __init__(self, units):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[1], self.units), initializer="random_normal", name="w")

    def call(self, inputs):
        return tnp.tanh(tnp.matmul(inputs, self.w))


def tnp_mse(y_true, y_pred):
    return tnp.mean(tnp.square(y_true - y_pred), axis=0)


out = {}
strategy = tf.distribute.get_strategy()
out["replicas"] = strategy.num_replicas_in_sync
for name, make, loss in [("model", TNPNet, "mean_squared_error"), ("loss", TNPNet, tnp_mse),
                         ("layers", lambda: keras.Sequential([TNPDense(3), keras.layers.Dense(1)]), "mse")]:
    with strategy.scope():
        model = make()
        model.compile(optimizer=keras.optimizers.SGD(0.01), loss=loss)
        model.build((None, 5))
    model.set_weights([np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32")
                       for w in model.get_weights()])
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    out[name] = history.history["loss"] + model.predict(x[:3], verbose=0).ravel().tolist()
eager = np.array([[1.0, -2.0], [3.0, 4.0]], "float32")
out["mean_dtype"] = float(tnp.mean(np.array([1, 2], "int32"), dtype=tnp.float32))
out["sum_keepdims"] = np.asarray(tnp.sum(eager, 1, None, True)).tolist()
out["clip"] = np.asarray(tnp.clip(eager, a_min=0.0, a_max=3.0)).tolist()
out["reshape"] = np.asarray(tnp.reshape(eager, newshape=(4,))).tolist()
out["where"] = np.asarray(tnp.where(eager > 0, x=eager, y=tnp.zeros_like(eager))).tolist()
print(json.dumps(out))
"""



def test_tnp_models_train_as_in_tensorflow(tmp_path):
    script = tmp_path / "tnp_models.py"
    script.write_text(SCRIPT)
    got, want = run_script(script, runner=True), run_script(script, runner=False)
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-6, err_msg=key)


def test_tnp_argument_without_keras_meaning_is_named():
    tnp = FFTF.experimental.numpy
    with pytest.raises(RawTensorFlowError, match=r"tf\.experimental\.numpy\.var: ddof=1 is not supported"):
        tnp.var(np.ones(3, "float32"), ddof=1)
    with pytest.raises(RawTensorFlowError, match=r"tf\.experimental\.numpy\.fft"):
        tnp.fft(np.ones(3, "float32"))
