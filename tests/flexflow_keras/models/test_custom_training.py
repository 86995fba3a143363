"""Custom code in training: add_weight + add_loss layers, a VAE's sampling layer, Keras 2's model.add_loss
with a loss-less compile, a siamese Lambda distance with a batch-mean loss, a compute_loss override, clear
errors for Python step overrides, model(x).numpy() and Keras 3's input rank rule."""

from __future__ import annotations

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import backend as K
from flexflow_keras import layers, ops
from flexflow_keras.errors import ShapeError

rng = np.random.default_rng(0)
X = rng.random((32, 4)).astype("float32")
Y = rng.random((32, 1)).astype("float32")


class Scale(layers.Layer):
    def __init__(self, penalty, **kwargs):
        super().__init__(**kwargs)
        self.penalty = penalty

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w", trainable=True)

    def call(self, x):
        self.add_loss(self.penalty * ops.sum(ops.square(self.w)))
        return x * self.w


def test_add_weight_and_add_loss_train_and_count_in_the_loss():
    inp = keras.Input((4,))
    scale = Scale(0.5)
    model = keras.Model(inp, layers.Dense(1, kernel_initializer="zeros")(scale(inp)))
    model.compile("sgd", "mse")
    base = float(np.mean(Y ** 2))  # zero kernel: the mse part is mean(y^2)
    assert model.evaluate(X, Y, verbose=0) == pytest.approx(base + 0.5 * 4, rel=1e-4)
    model.fit(X, Y, epochs=2, batch_size=8, verbose=0)
    w = scale.w.numpy()
    assert np.all(w < 1.0)  # the penalty's gradient shrinks w
    assert model.evaluate(X, Y, verbose=0) < base + 0.5 * 4
    scale(X[:2])
    assert scale.losses == [pytest.approx(0.5 * float(np.sum(w ** 2)), rel=1e-5)]


class Sampling(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch, dim = ops.shape(z_mean)[0], ops.shape(z_mean)[1]
        eps = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
        self.add_loss(-0.5 * ops.mean(ops.sum(1 + z_log_var - ops.square(z_mean) - ops.exp(z_log_var), axis=1)))
        return z_mean + ops.exp(0.5 * z_log_var) * eps


def test_vae_sampling_layer_fits_and_draws_fresh_noise():
    inp = keras.Input((4,))
    h = layers.Dense(8, activation="relu")(inp)
    z = Sampling()([layers.Dense(2)(h), layers.Dense(2)(h)])
    vae = keras.Model(inp, layers.Dense(4, activation="sigmoid")(z))
    vae.compile("adam", "binary_crossentropy")
    hist = vae.fit(X, X, epochs=1, batch_size=8, verbose=0)
    assert np.isfinite(hist.history["loss"][0])
    a, b = vae(X[:4]).numpy(), vae(X[:4]).numpy()
    assert a.shape == (4, 4) and not np.allclose(a, b)  # eager calls draw new noise


def test_keras2_vae_with_model_add_loss_and_no_compiled_loss():
    inp = keras.Input((4,))
    h = layers.Dense(8, activation="relu")(inp)
    z_mean, z_log_var = layers.Dense(2)(h), layers.Dense(2)(h)

    def sampling(args):
        zm, zl = args
        epsilon = K.random_normal(shape=(K.shape(zm)[0], K.int_shape(zm)[1]))
        return zm + K.exp(0.5 * zl) * epsilon

    z = layers.Lambda(sampling, output_shape=(2,))([z_mean, z_log_var])
    out = layers.Dense(4, activation="sigmoid")(z)
    vae = keras.Model(inp, out)
    reconstruction = K.mean(K.binary_crossentropy(inp, out), axis=-1) * 4
    kl = -0.5 * K.sum(1 + z_log_var - K.square(z_mean) - K.exp(z_log_var), axis=-1)
    vae.add_loss(K.mean(reconstruction + kl))
    vae.compile(optimizer="adam")
    hist = vae.fit(X, epochs=2, batch_size=8, verbose=0, validation_data=(X, None))
    assert hist.history["loss"][1] < hist.history["loss"][0] + 0.5 and np.isfinite(hist.history["val_loss"][0])


def test_siamese_lambda_distance_and_batch_mean_contrastive_loss():
    def euclidean_distance(vects):
        a, b = vects
        return K.sqrt(K.maximum(K.sum(K.square(a - b), axis=1, keepdims=True), K.epsilon()))

    def contrastive_loss(y_true, y_pred):
        return K.mean(y_true * K.square(y_pred) + (1 - y_true) * K.square(K.maximum(1 - y_pred, 0)))

    base = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu")])
    a, b = keras.Input((4,)), keras.Input((4,))
    model = keras.Model([a, b], layers.Lambda(euclidean_distance)([base(a), base(b)]))
    def accuracy(y_true, y_pred):  # mnist_siamese.py's metric: a batch mean, not per sample
        return K.mean(K.equal(y_true, K.cast(y_pred < 0.5, y_true.dtype)))

    model.compile("rmsprop", contrastive_loss, metrics=[accuracy])
    labels = (Y > 0.5).astype("float32")
    d = model.predict([X, X[::-1]], verbose=0)
    want = np.mean(labels * d ** 2 + (1 - labels) * np.maximum(1 - d, 0) ** 2)
    loss, acc = model.evaluate([X, X[::-1]], labels, batch_size=32, verbose=0)
    assert loss == pytest.approx(want, rel=1e-4) and acc == pytest.approx(np.mean(labels == (d < 0.5)))
    assert np.isfinite(model.fit([X, X[::-1]], labels, epochs=1, batch_size=8, verbose=0).history["loss"][0])


def test_compute_loss_override_trains():
    class Custom(keras.Model):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
            return 2.0 * ops.mean(ops.abs(y_pred - y)) + ops.sum(self.losses)

    inp = keras.Input((4,))
    model = Custom(inp, layers.Dense(1, kernel_initializer="zeros")(inp))
    model.compile("sgd")
    assert model.evaluate(X, Y, verbose=0) == pytest.approx(2.0 * float(np.mean(np.abs(Y))), rel=1e-4)
    assert np.isfinite(model.fit(X, Y, epochs=1, batch_size=8, verbose=0).history["loss"][0])


def test_compute_loss_override_without_training_argument():
    """Keras 3.0-3.2's signature (keras.io's masked language model): Keras' trainer calls it without
    `training`; a TypeError stopped fit and evaluate."""
    class Old(keras.Model):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
            return 3.0 * ops.mean(ops.abs(y_pred - y))

    inp = keras.Input((4,))
    model = Old(inp, layers.Dense(1, kernel_initializer="zeros")(inp))
    model.compile("sgd")
    assert model.evaluate(X, Y, verbose=0) == pytest.approx(3.0 * float(np.mean(np.abs(Y))), rel=1e-4)
    assert np.isfinite(model.fit(X, Y, epochs=1, batch_size=8, verbose=0).history["loss"][0])


def test_compute_loss_override_with_kwargs_is_not_given_training():
    """Keras' trainer passes `training` only to a parameter of that name, not to **kwargs."""
    seen = []

    class Kw(keras.Model):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, **kwargs):
            seen.append(sorted(kwargs))
            return ops.mean(ops.abs(y_pred - y))

    inp = keras.Input((4,))
    model = Kw(inp, layers.Dense(1, kernel_initializer="zeros")(inp))
    model.compile("sgd")
    model.evaluate(X, Y, verbose=0)
    assert seen and all(k == [] for k in seen)


def test_train_step_super_with_compute_loss_without_training_argument():
    class Old(keras.Model):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
            return 3.0 * ops.mean(ops.abs(y_pred - y))

        def train_step(self, data):
            return super().train_step(data)

    inp = keras.Input((4,))
    model = Old(inp, layers.Dense(1, kernel_initializer="zeros")(inp))
    model.compile("sgd")
    history = model.fit(X, Y, epochs=1, batch_size=32, shuffle=False, verbose=0).history
    assert history["loss"][0] == pytest.approx(3.0 * float(np.mean(np.abs(Y))), rel=1e-4)


class _Tape:
    """Stands in for tf.GradientTape in a keras.io-style train_step (importing TensorFlow is slow)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def gradient(self, loss, variables):
        raise AssertionError("the trace must end at compute_loss")


def test_keras_io_train_step_trains_its_compute_loss():
    class Guide(keras.Model):
        def train_step(self, data):
            x, y = data
            with _Tape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred)
            gradients = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(gradients, self.trainable_variables)
            return {m.name: m.result() for m in self.metrics}

    inp = keras.Input((4,))
    model = Guide(inp, layers.Dense(1)(inp))
    model.compile("sgd", "mse")
    before = model.evaluate(X, Y, verbose=0)
    hist = model.fit(X, Y, epochs=3, batch_size=8, verbose=0)
    assert hist.history["loss"][-1] < before


def test_train_step_calling_super_after_changing_the_data():
    class Doubled(keras.Model):
        def train_step(self, data):
            x, y = data
            return super().train_step((x, y * 2.0))

    inp = keras.Input((4,))
    model = Doubled(inp, layers.Dense(1, kernel_initializer="zeros")(inp))
    model.compile("sgd", "mse")
    assert model.evaluate(X, Y, verbose=0) == pytest.approx(float(np.mean((2 * Y) ** 2)), rel=1e-4)


def test_a_step_with_two_gradients_runs_eagerly_as_written():
    """Not traceable (two gradients), so fit runs it batch by batch (models/eager_fit.py); its eager
    compute_loss and two applies over the two halves of the weights make one plain SGD step."""
    from flexflow_keras.ops.tape import GradientTape

    class Two(keras.Model):
        def train_step(self, data):
            x, y = data
            with GradientTape(persistent=True) as tape:
                loss = self.compute_loss(x=x, y=y, y_pred=self(x, training=True))
            first, second = self.trainable_variables[:2], self.trainable_variables[2:]
            self.optimizer.apply(tape.gradient(loss, first), first)
            self.optimizer.apply(tape.gradient(loss, second), second)
            return {"loss": loss}

    def build(cls):
        keras.utils.set_random_seed(3)
        inp = keras.Input((4,))
        return cls(inp, layers.Dense(1)(layers.Dense(3, activation="tanh")(inp)))

    two, plain = build(Two), build(keras.Model)
    plain.set_weights(two.get_weights())
    for m in (two, plain):
        m.compile(keras.optimizers.SGD(0.05), "mse")
        m.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(two.get_weights(), plain.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert two.predict(X[:2], verbose=0).shape == (2, 1)  # predict runs the graph as it is


def test_add_metric_is_refused_as_in_keras_3():
    with pytest.raises(NotImplementedError, match="compile\\(metrics"):
        layers.Dense(1).add_metric(ops.ones(()))


def test_model_call_returns_a_tensor_like_and_inputs_gain_a_trailing_one():
    inp = keras.Input((3, 3, 1))
    model = keras.Model(inp, layers.Dense(2)(layers.Flatten()(inp)))
    model.compile("sgd", "mse")
    x = rng.random((8, 3, 3)).astype("float32")
    out = model(x)
    assert out.numpy().shape == (8, 2) and type(out.numpy()) is np.ndarray
    assert out.shape == (8, 2) and out.dtype == np.float32 and np.asarray(out).shape == (8, 2)
    np.testing.assert_allclose(model.predict(x[..., None], verbose=0), out.numpy(), rtol=1e-5)
    assert np.isfinite(model.fit(x, np.zeros((8, 2), "float32"), epochs=1, verbose=0).history["loss"][0])
    with pytest.raises(ShapeError):
        model.predict(rng.random((8, 3)).astype("float32"), verbose=0)


def test_lambda_output_shape_is_checked():
    inp = keras.Input((4,))
    assert layers.Lambda(lambda t: t[:, :2], output_shape=(2,))(inp).shape == (None, 2)
    with pytest.raises(ShapeError, match="output_shape"):
        layers.Lambda(lambda t: t[:, :2], output_shape=(3,))(inp)


def test_a_graph_of_many_ops_trains_and_predict_matches_eager_calls():
    def block(t):
        a = ops.take(t[:, 1:], [0, 2, 2], axis=1)  # (None, 3)
        b = ops.einsum("bi,ij->bj", ops.tile(a, (1, 2)), np.ones((6, 4), "float32"))  # (None, 4)
        c = ops.cumsum(ops.repeat(b, 2, axis=1), axis=1) / 8.0  # (None, 8)
        d = ops.sort(ops.pad(c, [(0, 0), (1, 1)]))  # (None, 10)
        e = ops.logsumexp(ops.stack([d, -d], axis=1), axis=1)  # (None, 10)
        return ops.concatenate([e, ops.norm(a, axis=1, keepdims=True), ops.top_k(d, 3)[0]], axis=-1)

    inp = keras.Input((5,))
    h = layers.Dense(5)(inp)
    out = layers.Dense(1)(layers.Lambda(block)(h))
    model = keras.Model(inp, out)
    model.compile("adam", "mse")
    hist = model.fit(X[:, :4].repeat(2, axis=1)[:, :5], Y, epochs=2, batch_size=8, verbose=0)
    assert np.isfinite(hist.history["loss"]).all()
    x = rng.random((6, 5)).astype("float32")
    np.testing.assert_allclose(model.predict(x, verbose=0), model(x).numpy(), rtol=1e-4, atol=1e-5)


def test_add_weight_arguments():
    class W(layers.Layer):
        def build(self, input_shape):
            self.k = self.add_weight(shape=(input_shape[-1], 2), initializer="ones", regularizer="l2",
                                     constraint="non_neg", name="k", dtype="float32", aggregation="mean")
            self.s = self.add_weight("s", (2,), "float32", "zeros", None, False)  # Keras 2's positional order
            self.n = self.add_weight(shape=(), initializer=keras.initializers.Constant(3.0), trainable=False)

        def call(self, x):
            return ops.matmul(x, self.k) + self.s + self.n

    layer = W()
    out = layer(np.ones((2, 3), "float32"))
    assert out.numpy().tolist() == [[6.0, 6.0], [6.0, 6.0]]
    assert [w.name for w in layer.trainable_weights] == ["k"] and len(layer.non_trainable_weights) == 2
    assert layer.losses == [pytest.approx(0.01 * 6.0)]
    with pytest.raises(ValueError, match="overwrite_with_gradient"):
        layers.Layer().add_weight(shape=(1,), overwrite_with_gradient=True)


def test_a_sublayer_called_on_ops_arange_inside_call_trains():
    class TokenAndPosition(layers.Layer):  # keras.io's text-classification transformer embedding
        def __init__(self, maxlen, vocab, dim):
            super().__init__()
            self.token_emb = layers.Embedding(input_dim=vocab, output_dim=dim)
            self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=dim)

        def call(self, x):
            positions = self.pos_emb(ops.arange(start=0, stop=ops.shape(x)[-1], step=1))
            return self.token_emb(x) + positions

    inp = keras.Input((5,), dtype="int32")
    emb = TokenAndPosition(5, 20, 4)
    model = keras.Model(inp, layers.Dense(2, activation="softmax")(ops.mean(emb(inp), axis=1)))
    model.compile("adam", "sparse_categorical_crossentropy")
    before = emb.pos_emb.get_weights()[0].copy()
    model.fit(rng.integers(0, 20, (32, 5)), rng.integers(0, 2, 32), epochs=1, batch_size=16, verbose=0)
    assert not np.allclose(before, emb.pos_emb.get_weights()[0])


def test_a_model_of_a_one_element_output_list():
    """Keras 3: called on arrays it returns the tensor; on symbolic inputs, the list."""
    inp = keras.Input((4,))
    enc = keras.Model(inp, [layers.Dense(2)(inp)])
    assert enc(np.ones((3, 4), "float32")).shape == (3, 2)
    out = enc(keras.Input((4,)))
    assert isinstance(out, list) and len(out) == 1 and out[0].shape == (None, 2)
