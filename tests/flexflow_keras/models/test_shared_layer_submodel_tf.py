"""A model cut from another's layers (keras.io's handwriting recognition: ``prediction_model = Model(image,
model.get_layer("dense2").output)``, called in a callback during fit and after it) predicts with the weights
the other model trained, as in Keras, where layers share their variables. Its engine kept the values it had
when it was first used: after the fit it predicted the untrained outputs. Compared with tf.keras 3.15 from
the same weights, with predictions before, during (a callback) and after two fits, and a GAN-style loop
alternating train_on_batch between a discriminator and the frozen-discriminator combined model."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras  # noqa: E402

pytestmark = pytest.mark.tf
RNG = np.random.default_rng(0)
X = RNG.normal(size=(16, 3)).astype("float32")
Y = RNG.normal(size=(16, 2)).astype("float32")
W = [RNG.normal(size=(3, 4)).astype("float32"), np.zeros(4, "float32"),
     RNG.normal(size=(4, 2)).astype("float32"), np.zeros(2, "float32")]


def _submodel_run(keras):
    image = keras.Input((3,), name="image")
    hidden = keras.layers.Dense(4, name="d1")(image)
    model = keras.Model(image, keras.layers.Dense(2, name="d2")(hidden))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    model.set_weights(W)
    sub = keras.Model(model.get_layer("image").output, model.get_layer("d1").output)
    seen = [sub.predict(X, verbose=0)]

    class Probe(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append(sub.predict(X, verbose=0))

    for _ in range(2):
        model.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0, callbacks=[Probe()])
        seen.append(sub.predict(X, verbose=0))
    seen.append(model.predict(X, verbose=0))
    return seen + [w for w in model.get_weights()]


def test_submodel_predicts_with_the_trained_weights():
    got, want = _submodel_run(flexflow_keras), _submodel_run(tf.keras)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"item {k}")


def _gan_run(keras):
    g_in = keras.Input((3,))
    generator = keras.Model(g_in, keras.layers.Dense(2, name="g")(g_in))
    d_in = keras.Input((2,))
    discriminator = keras.Model(d_in, keras.layers.Dense(1, activation="sigmoid", name="d")(d_in))
    discriminator.compile(optimizer=keras.optimizers.SGD(0.2), loss="binary_crossentropy")
    discriminator.trainable = False
    combined = keras.Model(g_in, discriminator(generator(g_in)))
    combined.compile(optimizer=keras.optimizers.SGD(0.2), loss="binary_crossentropy")
    generator.set_weights([W[0][:, :2], np.zeros(2, "float32")])
    discriminator.set_weights([W[2][:2, :1], np.zeros(1, "float32")])
    out = []
    for _ in range(3):
        fake = generator.predict(X, verbose=0)
        real = Y
        d_loss = discriminator.train_on_batch(np.concatenate([real, fake]),
                                              np.concatenate([np.ones((16, 1)), np.zeros((16, 1))]).astype("float32"))
        g_loss = combined.train_on_batch(X, np.ones((16, 1), "float32"))
        out += [np.asarray(d_loss), np.asarray(g_loss), discriminator.predict(fake, verbose=0),
                generator.predict(X, verbose=0)]
    return out


def test_gan_loop_alternating_models_matches_tensorflow():
    got, want = _gan_run(flexflow_keras), _gan_run(tf.keras)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6, err_msg=f"item {k}")


def _recompiled_encoder_run(keras):
    inp = keras.Input((3,))
    encoder = keras.Model(inp, keras.layers.Dense(4, activation="tanh", name="enc")(inp))
    autoencoder = keras.Model(inp, keras.layers.Dense(2, name="dec")(encoder(inp)))
    autoencoder.compile(optimizer=keras.optimizers.SGD(0.3), loss="mse")
    autoencoder.set_weights(W)
    autoencoder.fit(X, Y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    out = [encoder.predict(X, verbose=0)]  # an inference engine of the encoder: the autoencoder's keeps them
    autoencoder.train_on_batch(X[:8], Y[:8])  # trains the shared weights in the autoencoder's engine only
    encoder.compile(optimizer=keras.optimizers.SGD(0.3), loss="mse")  # drops the encoder's predict engine
    out += [autoencoder.predict(X, verbose=0), encoder.predict(X, verbose=0)]
    return out + autoencoder.get_weights()


def test_recompiling_a_submodel_keeps_the_holders_training():
    """The encoder's compile detaches its predict engine, which handed the shared variables back to the host
    although the autoencoder's engine held them: the autoencoder's last train_on_batch was lost."""
    got, want = _recompiled_encoder_run(flexflow_keras), _recompiled_encoder_run(tf.keras)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"item {k}")


def _gan_toggle_run(keras, copies=None):
    """The Keras 3 form of the loop: `trainable` set before each call (Keras 3 reads it at every call, so
    a discriminator frozen once would not train itself either)."""
    g_in = keras.Input((3,))
    generator = keras.Model(g_in, keras.layers.Dense(2, name="g")(g_in))
    d_in = keras.Input((2,))
    discriminator = keras.Model(d_in, keras.layers.Dense(1, activation="sigmoid", name="d")(d_in))
    discriminator.compile(optimizer=keras.optimizers.Adam(0.05), loss="binary_crossentropy")
    combined = keras.Model(g_in, discriminator(generator(g_in)))
    discriminator.trainable = False
    combined.compile(optimizer=keras.optimizers.Adam(0.05), loss="binary_crossentropy")
    generator.set_weights([W[0][:, :2], np.zeros(2, "float32")])
    discriminator.set_weights([W[2][:2, :1], np.zeros(1, "float32")])
    out = []
    for step in range(4):
        if copies is not None and step == 2:
            copies.clear()  # count the steady loop's copies, after each model has its engines
        fake = generator.predict(X, verbose=0)
        discriminator.trainable = True
        d_loss = discriminator.train_on_batch(np.concatenate([Y, fake]),
                                              np.concatenate([np.ones((16, 1)), np.zeros((16, 1))]).astype("float32"))
        discriminator.trainable = False
        g_loss = combined.train_on_batch(X, np.ones((16, 1), "float32"))
        out += [np.asarray(d_loss), np.asarray(g_loss), fake]
    if copies is not None:
        copies.append(("end", ""))  # the host reads below are not the loop's
    return out + generator.get_weights() + discriminator.get_weights()


def test_gan_loop_setting_trainable_before_each_call(monkeypatch):
    """The combined model only reads the discriminator's weights: they stay with the discriminator's engine,
    which trains them (Engine.attach), and the combined model refreshes its copy at each call. Before, each
    model's call took them from the other, copying them twice per step (6 weight copies in and 6 out per
    iteration here, now 4 and 4)."""
    from flexflow_keras.execution.store import WeightStore

    copies = []
    pull_many, push = WeightStore.pull_many, WeightStore.push
    monkeypatch.setattr(WeightStore, "pull_many", lambda self, vs: (copies.extend(("pull", v.path) for v in vs),
                                                                    pull_many(self, vs))[1])
    monkeypatch.setattr(WeightStore, "push", lambda self, v: (copies.append(("push", v.path)), push(self, v))[1])
    got = _gan_toggle_run(flexflow_keras, copies)
    want = _gan_toggle_run(tf.keras)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6, err_msg=f"item {k}")
    loop = copies[:copies.index(("end", ""))]
    assert sum(kind == "push" for kind, _ in loop) == 2 * 4, loop  # 2 iterations: g's 2 and d's 2 each
    assert sum(kind == "pull" for kind, _ in loop) == 2 * 4, loop
