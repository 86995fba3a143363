"""keras.io's metric_learning: a functional model whose train_step calls it on pieces of its batch
(``anchors, positives = data[0], data[1]``, ``self(anchors)``, ``self(positives)``, an einsum of the two as
logits, ``self.compute_loss(y=arange(n), y_pred=...)``) on a PyDataset yielding (2, n, ...) arrays. The
step calls compute_loss, so fit traced it on the batch's x, which does not fit the model's inputs: fit
raised "expects samples of shape (4,), received (3, 4)". It now runs the step eagerly, as written, and
trains as tf.keras 3."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.errors import ShapeError  # noqa: E402
from flexflow_keras.models import step_hooks  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
N = 3


def _model(K, T):
    class EmbeddingModel(K.Model):
        def train_step(self, data):
            if isinstance(data, tuple):
                data = data[0]
            anchors, positives = data[0], data[1]
            with T.GradientTape() as tape:
                a = self(anchors, training=True)
                p = self(positives, training=True)
                similarities = K.ops.einsum("ae,pe->ap", a, p) / 0.2
                labels = K.ops.arange(N)
                loss = self.compute_loss(y=labels, y_pred=similarities)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
            return {m.name: m.result() for m in self.metrics}

    inputs = K.layers.Input(shape=(4,))
    x = K.layers.Dense(5, activation="relu")(inputs)
    return EmbeddingModel(inputs, K.layers.UnitNormalization()(K.layers.Dense(3)(x)))


def _pairs(K, batches):
    class Pairs(K.utils.PyDataset):
        def __len__(self):
            return len(batches)

        def __getitem__(self, i):
            return batches[i]

    return Pairs()


def test_unfit_batch_of_a_train_step_runs_it_eagerly():
    m = _model(ff, FFTF)
    assert step_hooks.eager_reason(m, "train_step") is None  # it calls compute_loss: traced first
    assert "takes out of its batch" in step_hooks.unfit_data_reason(m, ShapeError("x"))


def test_step_calling_the_model_on_pieces_of_its_batch_trains_as_tf_keras():
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((2, N, 4)).astype("float32") for _ in range(4)]
    tk.utils.set_random_seed(0)
    tm, fm = _model(tk, tf), _model(ff, FFTF)
    fm.set_weights(tm.get_weights())
    hist = []
    for m, K in ((tm, tk), (fm, ff)):
        m.compile(optimizer=K.optimizers.SGD(0.2), loss=K.losses.SparseCategoricalCrossentropy(from_logits=True))
        hist.append(m.fit(_pairs(K, batches), epochs=2, shuffle=False, verbose=0).history["loss"])
    np.testing.assert_allclose(hist[1], hist[0], rtol=1e-5)
    for a, b in zip(fm.get_weights(), tm.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
