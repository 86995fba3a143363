"""fit(dataset, steps_per_epoch=...) of a model whose own train_step runs eagerly reads one iterator across
epochs and starts a new pass once a pass of known length is read, as Keras 3's EpochIterator: keras.io's
better knowledge distillation recipe fits its Distiller on a finite dataset with steps_per_epoch equal to its
batches; after the first epoch the iterator was spent, every later epoch trained nothing (the optimizer's
iterations stayed at one epoch's) and History repeated the first epoch's loss."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tf_keras = pytest.importorskip("tensorflow.keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras.data.slices import SliceDataset  # noqa: E402
from flexflow_keras.ops.tape import GradientTape  # noqa: E402

pytestmark = pytest.mark.tf

rs = np.random.RandomState(0)
X = rs.rand(64, 4).astype("float32")
Y = rs.rand(64, 1).astype("float32")
W = [rs.randn(4, 1).astype("float32"), np.zeros(1, "float32")]


def _model(lib, tape_cls):
    class Regressor(lib.Model):
        def __init__(self):
            super().__init__()
            self.dense = lib.layers.Dense(1)
            self.tracker = lib.metrics.Mean(name="l")

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            x, y = data
            with tape_cls() as tape:
                loss = lib.ops.mean(lib.ops.square(self(x, training=True) - y))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            self.tracker.update_state(loss)
            return {"l": self.tracker.result()}

    model = Regressor()
    model(X[:1])
    model.set_weights(W)
    model.compile(lib.optimizers.SGD(0.1))
    return model


@pytest.mark.parametrize("steps", [4, 2])
def test_finite_dataset_is_read_again_across_epochs(steps):
    model = _model(ff, GradientTape)
    got = model.fit(SliceDataset.from_tensor_slices((X, Y)).batch(16), steps_per_epoch=steps, epochs=3, verbose=0)
    ref = _model(tf_keras, tf.GradientTape)
    want = ref.fit(tf.data.Dataset.from_tensor_slices((X, Y)).batch(16), steps_per_epoch=steps, epochs=3, verbose=0)
    assert int(np.asarray(model.optimizer.iterations)) == int(ref.optimizer.iterations.numpy()) == 3 * steps
    np.testing.assert_allclose(got.history["l"], want.history["l"], rtol=1e-5)
    for g, w in zip(model.get_weights(), ref.get_weights(), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)
