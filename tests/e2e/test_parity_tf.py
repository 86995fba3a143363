"""Parity with tf.keras: the same architecture, weights copied with set_weights, the same batches.

Loss after each of 5 training steps within 1e-4 relative (SGD+momentum, Adam, RMSprop) on an MLP, a CNN
with BatchNormalization and pooling, and an Embedding model; evaluate/predict within 1e-5.
"""

import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


def mlp(k):
    return k.Sequential([k.Input(shape=(20,)), k.layers.Dense(32, activation="relu"),
                         k.layers.Dense(16, activation="tanh"), k.layers.Dense(5, activation="softmax")])


def cnn(k):
    # The conv feeding BatchNormalization has no bias (the usual pattern): BN cancels a bias, so its true
    # gradient is zero and its computed one is rounding noise, which Adam/RMSprop amplify to +-lr.
    L = k.layers
    return k.Sequential([k.Input(shape=(10, 10, 2)), L.Conv2D(6, 3, use_bias=False), L.BatchNormalization(),
                         L.ReLU(),
                         L.MaxPooling2D(2), L.Conv2D(8, 3, padding="same", activation="relu"),
                         L.AveragePooling2D(2), L.Flatten(), L.Dense(4, activation="softmax")])


def embed(k):
    L = k.layers
    return k.Sequential([k.Input(shape=(6,), dtype="int32"), L.Embedding(120, 8), L.Flatten(),
                         L.Dense(8, activation="relu"), L.Dense(1, activation="sigmoid")])


def data(name, n, rng):
    if name == "mlp":
        return rng.standard_normal((n, 20)).astype("float32"), rng.integers(0, 5, n)
    if name == "cnn":
        y = rng.integers(0, 4, n)
        return rng.standard_normal((n, 10, 10, 2)).astype("float32"), np.eye(4, dtype="float32")[y]
    # Each batch of 16 holds every id at most once: TF's backend squares IndexedSlices values before it
    # merges repeated ids (Adam/RMSprop second moments), unlike the dense Keras 3 formula we compute (and
    # the JAX/torch backends do); with distinct ids the two agree.
    ids = np.concatenate([rng.permutation(120)[:96] for _ in range(-(-n // 16))]).reshape(-1, 6)[:n]
    return ids.astype("int32"), rng.integers(0, 2, (n, 1)).astype("float32")


LOSS = {"mlp": "sparse_categorical_crossentropy", "cnn": "categorical_crossentropy",
        "embed": "binary_crossentropy"}
BUILD = {"mlp": mlp, "cnn": cnn, "embed": embed}
OPTS = {
    "sgd": lambda k: k.optimizers.SGD(learning_rate=0.1, momentum=0.9),
    "adam": lambda k: k.optimizers.Adam(learning_rate=0.01),
    "rmsprop": lambda k: k.optimizers.RMSprop(learning_rate=0.01),
}


def pair(name, opt):
    tf.keras.utils.set_random_seed(1)
    theirs = BUILD[name](tf.keras)
    ours = BUILD[name](ff)
    ours.set_weights(theirs.get_weights())
    for m, k in ((theirs, tf.keras), (ours, ff)):
        m.compile(optimizer=OPTS[opt](k), loss=LOSS[name], metrics=["accuracy"])
    return ours, theirs


@pytest.mark.parametrize("name", ["mlp", "cnn", "embed"])
@pytest.mark.parametrize("opt", ["sgd", "adam", "rmsprop"])
def test_five_steps_match(name, opt):
    rng = np.random.default_rng(0)
    ours, theirs = pair(name, opt)
    x, y = data(name, 5 * 16, rng)
    for step in range(5):
        xb, yb = x[step * 16:(step + 1) * 16], y[step * 16:(step + 1) * 16]
        lt = float(theirs.train_on_batch(xb, yb)[0])
        lo = float(ours.train_on_batch(xb, yb)[0])
        assert abs(lo - lt) <= 1e-4 * abs(lt), (step, lo, lt)
    for wo, wt in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(wo, wt, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", ["mlp", "cnn", "embed"])
def test_evaluate_and_predict_match(name):
    rng = np.random.default_rng(1)
    ours, theirs = pair(name, "adam")
    x, y = data(name, 50, rng)
    np.testing.assert_allclose(ours.predict(x, batch_size=16, verbose=0),
                               theirs.predict(x, batch_size=16, verbose=0), rtol=1e-5, atol=1e-6)
    eo = ours.evaluate(x, y, batch_size=16, verbose=0)
    et = theirs.evaluate(x, y, batch_size=16, verbose=0)
    np.testing.assert_allclose(eo, et, rtol=1e-5)
