"""fit/evaluate/train_on_batch of a train_step that computes its own gradients (models/eager_fit.py): the
keras.io VAE and GAN pattern runs as written, batch by batch, with GradientTape; it trains exactly as
plain fit does when it computes the same thing; the model's metrics reset per epoch; callbacks,
validation through test_step, datasets and generators work; what it cannot honour is a clear error."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import layers, ops
from flexflow_keras.errors import DataError, GraphError
from flexflow_keras.ops.tape import GradientTape

RNG = np.random.default_rng(0)
X = RNG.standard_normal((40, 5)).astype("float32")
Y = RNG.integers(0, 3, 40)


class OwnStep(keras.Model):
    """A classifier whose train_step does by hand what fit does (no compute_loss): tape, gradient, apply."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(8, activation="relu")
        self.out = layers.Dense(3)
        self.loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.tracker = keras.metrics.Mean(name="loss")
        self.seen = []

    def call(self, x, training=False):
        return self.out(self.hidden(x))

    @property
    def metrics(self):
        return [self.tracker]

    def train_step(self, data):
        x, y = data
        with GradientTape() as tape:
            loss = self.loss_fn(y, self(x, training=True))
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights, strict=True))
        self.tracker.update_state(loss)
        self.seen.append(float(loss))
        return {"loss": self.tracker.result()}

    def test_step(self, data):
        x, y = data
        self.tracker.update_state(self.loss_fn(y, self(x)))
        return {"loss": self.tracker.result()}


def _plain(own):
    inp = keras.Input((5,))
    model = keras.Model(inp, layers.Dense(3)(layers.Dense(8, activation="relu")(inp)))
    model.set_weights(own.get_weights())
    return model


def test_an_own_train_step_trains_as_plain_fit():
    own = OwnStep()
    own(X[:1])
    plain = _plain(own)
    own.compile(keras.optimizers.SGD(0.1))
    plain.compile(keras.optimizers.SGD(0.1), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    h_own = own.fit(X, Y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    h_plain = plain.fit(X, Y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    for a, b in zip(own.get_weights(), plain.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(h_own.history["loss"], h_plain.history["loss"], rtol=1e-4)
    # the tracker was reset at each epoch start: epoch 2's log is the mean of epoch 2's five batches
    assert h_own.history["loss"][1] == pytest.approx(np.mean(own.seen[5:10]), rel=1e-6)


def test_validation_callbacks_and_stop_training():
    own = OwnStep()
    own.compile(keras.optimizers.SGD(0.1))
    seen = []

    class Stop(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append((batch, sorted(logs)))

        def on_epoch_end(self, epoch, logs=None):
            seen.append(("epoch", sorted(logs)))
            if epoch == 1:
                self.model.stop_training = True

    h = own.fit(X, Y, batch_size=16, epochs=5, validation_data=(X[:8], Y[:8]), callbacks=[Stop()], verbose=0)
    assert len(h.history["loss"]) == 2 and len(h.history["val_loss"]) == 2
    assert seen[0] == (0, ["loss"]) and ("epoch", ["loss", "val_loss"]) in seen
    assert own.evaluate(X[:8], Y[:8], verbose=0) == pytest.approx(h.history["val_loss"][-1], rel=1e-6)
    logs = own.train_on_batch(X[:4], Y[:4], return_dict=True)
    assert set(logs) == {"loss"} and np.isfinite(logs["loss"])


class TwoOptimizers(keras.Model):
    """keras.io's GAN shape: no call(), its own compile, two tapes and two optimizers, a dataset of x."""

    def __init__(self):
        super().__init__()
        self.gen = keras.Sequential([keras.Input((2,)), layers.Dense(5)])
        self.disc = keras.Sequential([keras.Input((5,)), layers.Dense(1)])

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer, self.g_optimizer, self.loss_fn = d_optimizer, g_optimizer, loss_fn

    def train_step(self, real):
        n = ops.shape(real)[0]
        fake = self.gen(keras.random.normal((n, 2)))
        labels = ops.concatenate([ops.ones((n, 1)), ops.zeros((n, 1))], axis=0)
        with GradientTape() as tape:
            d_loss = self.loss_fn(labels, self.disc(ops.concatenate([fake, real], axis=0)))
        grads = tape.gradient(d_loss, self.disc.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.disc.trainable_weights, strict=True))
        with GradientTape() as tape:
            g_loss = self.loss_fn(ops.zeros((n, 1)), self.disc(self.gen(keras.random.normal((n, 2)))))
        grads = tape.gradient(g_loss, self.gen.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.gen.trainable_weights, strict=True))
        return {"d_loss": d_loss, "g_loss": g_loss}


def test_a_gan_without_call_trains_from_a_dataset_and_a_generator():
    gan = TwoOptimizers()
    gan.compile(keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3),
                keras.losses.BinaryCrossentropy(from_logits=True))
    before = [w.copy() for w in gan.gen.get_weights() + gan.disc.get_weights()]
    data = RNG.standard_normal((48, 5)).astype("float32")
    from flexflow_keras.data.slices import SliceDataset

    h = gan.fit(SliceDataset.from_tensor_slices(data).batch(16), epochs=2, verbose=0)
    assert set(h.history) == {"d_loss", "g_loss"} and len(h.history["d_loss"]) == 2
    after = gan.gen.get_weights() + gan.disc.get_weights()
    assert all(not np.array_equal(a, b) for a, b in zip(before, after, strict=True))

    def batches():
        while True:
            yield data[:16]

    h = gan.fit(batches(), steps_per_epoch=3, epochs=2, verbose=0)
    assert len(h.history["g_loss"]) == 2


def test_what_an_own_step_cannot_honour_is_named():
    own = OwnStep()
    own.compile(keras.optimizers.SGD(0.1))
    with pytest.raises(DataError, match="class_weight"):
        own.fit(X, Y, class_weight={0: 1.0, 1: 2.0, 2: 1.0}, verbose=0)
    split = own.fit(X, Y, validation_split=0.2, verbose=0)  # Keras 3 validates on the last samples
    assert "val_loss" in split.history
    gan = TwoOptimizers()
    gan.compile(keras.optimizers.SGD(), keras.optimizers.SGD(), keras.losses.BinaryCrossentropy())
    with pytest.raises(GraphError, match="test_step"):
        gan.fit(X, epochs=1, validation_data=(X,), verbose=0)


def test_compiled_metrics_in_an_own_step_are_the_models_metrics():
    """Keras 2's ``self.compiled_metrics.update_state(y, y_pred)`` then ``{m.name: m.result() for m in
    self.metrics}`` (keras-io's knowledge distillation): compile()'s metrics, built from the first update."""

    class Distiller(OwnStep):
        @property
        def metrics(self):
            return super(OwnStep, self).metrics

        def train_step(self, data):
            x, y = data
            with GradientTape() as tape:
                pred = self(x, training=True)
                loss = self.loss_fn(y, pred)
            grads = tape.gradient(loss, self.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.trainable_weights, strict=True))
            self.compiled_metrics.update_state(y, pred)
            return {m.name: m.result() for m in self.metrics} | {"student_loss": loss}

    model = Distiller()
    model.compile(keras.optimizers.Adam(0.05), metrics=["accuracy"])
    easy = (X[:, 0] > 0).astype("int32")
    h = model.fit(X, easy, batch_size=8, epochs=4, verbose=0)
    assert {"accuracy", "student_loss"} <= set(h.history)  # and the tracker it holds ("loss"), as Keras 3
    assert h.history["accuracy"][-1] > 0.8
    assert [m.name for m in model.metrics][:2] == ["loss", "accuracy"]  # Keras 3: its loss tracker first


def test_a_train_step_with_its_own_compute_loss_helper_runs_eagerly():
    # keras.io's siamese network: train_step calls self._compute_loss(data) on the whole (a, p, n) tuple; it is
    # not Keras' compute_loss, so the step is not traced on the first input alone
    a, b, c = layers.Input((4,)), layers.Input((4,)), layers.Input((4,))
    dense = layers.Dense(2)
    net = keras.Model([a, b, c], layers.Add()([dense(a), dense(b), dense(c)]))

    class Siamese(keras.Model):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.tracker = keras.metrics.Mean(name="loss")

        def call(self, inputs):
            return self.net(inputs)

        def _compute_loss(self, data):
            return ops.mean(ops.square(self.net(data)))

        def train_step(self, data):
            with GradientTape() as tape:
                loss = self._compute_loss(data)
            grads = tape.gradient(loss, self.net.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.net.trainable_weights, strict=True))
            self.tracker.update_state(loss)
            return {"loss": self.tracker.result()}

    x = np.random.default_rng(0).random((8, 4)).astype("float32")
    model = Siamese(net)
    model.compile(optimizer="adam")
    before = [w.copy() for w in net.get_weights()]
    model.fit(_triples(x), epochs=1, verbose=0)
    assert any(not np.array_equal(p, q) for p, q in zip(before, net.get_weights(), strict=True))


def _triples(x):
    from flexflow_keras.data.slices import SliceDataset

    return SliceDataset.from_tensor_slices((x, x, x)).batch(4)


@pytest.mark.parametrize("rnn", ["LSTM", "GRU"])
def test_apply_gradients_updates_recurrent_kernels_kept_transposed(rnn):
    model = keras.Sequential([keras.Input((3, 5)), getattr(layers, rnn)(4), layers.Dense(1)])
    x = np.random.default_rng(1).random((2, 3, 5)).astype("float32")
    before = [w.copy() for w in model.get_weights()]
    with GradientTape() as tape:
        loss = ops.mean(model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    keras.optimizers.Adam(0.1).apply_gradients(zip(grads, model.trainable_variables, strict=True))
    assert all(not np.array_equal(p, q) for p, q in zip(before, model.get_weights(), strict=True))
