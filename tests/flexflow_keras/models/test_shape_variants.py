"""Batches of varying length in one fit (models/shape_variants.py): each shape trains on a step graph of
its own that shares the weights and optimizer slots; the masks of an open-length model weigh its loss."""

from __future__ import annotations

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.models import shape_variants

LENGTHS = [12, 7, 12, 20, 7, 15]


def _batches(labels_per_token=False):
    rng = np.random.default_rng(0)
    out = []
    for length in LENGTHS:
        x = rng.integers(1, 50, (8, length)).astype("int32")
        x[:, length - 2:] = 0
        x[0, length // 2:] = 0
        y = rng.integers(0, 5, (8, length)).astype("int32") if labels_per_token else \
            rng.integers(0, 2, (8,)).astype("float32")
        out.append((x, y))
    return out


def _dataset(k, batches):
    class Batches(k.utils.PyDataset):
        def __len__(self):
            return len(batches)

        def __getitem__(self, i):
            return batches[i]

    return Batches()


def _pooled(k):
    inp = k.Input((None,), dtype="int32")
    h = k.layers.Embedding(50, 8, mask_zero=True)(inp)
    h = k.layers.GlobalAveragePooling1D()(h)
    m = k.Model(inp, k.layers.Dense(1, activation="sigmoid")(h))
    m.compile(k.optimizers.Adam(0.01), "binary_crossentropy", metrics=["accuracy"])
    return m


def test_varying_lengths_train_as_the_same_batches_padded_to_one_length(monkeypatch):
    # the pooling ignores masked steps, so padding every batch to 20 changes nothing: one step graph
    # against one per length (4 of them, with room for 2: evicted variants are made again)
    monkeypatch.setattr(shape_variants, "KEEP", 2)
    batches = _batches()
    padded = [(np.pad(x, ((0, 0), (0, 20 - x.shape[1]))), y) for x, y in batches]
    results = []
    for data in (batches, padded):
        keras.utils.set_random_seed(0)
        m = _pooled(keras)
        hist = m.fit(_dataset(keras, data), epochs=2, verbose=0, shuffle=False)
        results.append((hist.history, m.get_weights()))
    (h0, w0), (h1, w1) = results
    np.testing.assert_allclose(h0["loss"], h1["loss"], rtol=1e-6)
    np.testing.assert_allclose(h0["accuracy"], h1["accuracy"], rtol=1e-6)
    for a, b in zip(w0, w1, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_train_on_batch_keeps_the_optimizer_slots_across_lengths():
    # a loop over batches padded to their own lengths: Adam's moments carry over (a new engine per
    # length started them at zero again)
    batches = _batches()
    padded = [(np.pad(x, ((0, 0), (0, 20 - x.shape[1]))), y) for x, y in batches]
    logs = []
    for data in (batches, padded):
        keras.utils.set_random_seed(0)
        m = _pooled(keras)
        logs.append([m.train_on_batch(x, y) for x, y in data * 2] + [m.test_on_batch(*data[3])])
    np.testing.assert_allclose(logs[0], logs[1], rtol=1e-5)


def test_an_open_length_models_mask_weighs_its_loss_and_metrics():
    # Input(shape=(None,)) records the graph again at the data's length; the output's mask came along
    # only since this test's fix (before, the loss and accuracy counted the padded tokens)
    x, y = _batches(labels_per_token=True)[3]
    keras.utils.set_random_seed(0)
    inp = keras.Input((None,), dtype="int32")
    out = keras.layers.Dense(5)(keras.layers.Embedding(50, 8, mask_zero=True)(inp))
    m = keras.Model(inp, out)
    m.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    loss, acc = m.evaluate(x, y, verbose=0, batch_size=8)
    p = m.predict(x, verbose=0).astype(np.float64)
    logp = p - p.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    nll = -np.take_along_axis(logp, y[..., None].astype(np.int64), -1)[..., 0]
    valid = x != 0
    np.testing.assert_allclose(loss, nll[valid].mean(), rtol=1e-5)
    np.testing.assert_allclose(acc, (p.argmax(-1) == y)[valid].mean(), rtol=1e-6)


def test_a_tagger_on_batches_of_varying_length_trains_as_tf_keras():
    tf = pytest.importorskip("tensorflow")
    batches = _batches(labels_per_token=True)

    def build(k):
        inp = k.Input((None,), dtype="int32")
        h = k.layers.Embedding(50, 8, mask_zero=True)(inp)
        h = k.layers.Bidirectional(k.layers.GRU(6, return_sequences=True))(h)
        m = k.Model(inp, k.layers.Dense(5)(h))
        m.compile(k.optimizers.Adam(0.01), k.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
        return m

    keras.utils.set_random_seed(0)
    ours, theirs = build(keras), build(tf.keras)
    theirs.set_weights(ours.get_weights())
    h0 = ours.fit(_dataset(keras, batches), epochs=1, verbose=0, shuffle=False,
                  validation_data=_dataset(keras, batches)).history
    h1 = theirs.fit(_dataset(tf.keras, batches), epochs=1, verbose=0, shuffle=False,
                    validation_data=_dataset(tf.keras, batches)).history
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
        np.testing.assert_allclose(h0[key], h1[key], rtol=1e-4, err_msg=key)
    # an evaluation and a prediction at other lengths between two fits: the second fit goes on from the
    # first one's optimizer state (a new engine per length started Adam's moments again)
    np.testing.assert_allclose(ours.evaluate(_dataset(keras, batches[1:3]), verbose=0),
                               theirs.evaluate(_dataset(tf.keras, batches[1:3]), verbose=0), rtol=1e-4)
    x5 = batches[4][0]
    np.testing.assert_allclose(ours.predict(x5, verbose=0), theirs.predict(x5, verbose=0), rtol=1e-4, atol=1e-5)
    ours.train_on_batch(*batches[5])
    theirs.train_on_batch(*batches[5])
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


def test_a_second_fit_at_another_length_goes_on_from_the_optimizer_state():
    # fit's engine for another first length is a new one: it takes the old engine's slots (Keras keeps
    # one optimizer state); the reference pads the second fit's batch to the first length (one engine)
    batches = _batches()
    first, second = batches[0], batches[1]
    padded = (np.pad(second[0], ((0, 0), (0, first[0].shape[1] - second[0].shape[1]))), second[1])
    weights = []
    for data in (second, padded):
        keras.utils.set_random_seed(0)
        m = _pooled(keras)
        m.fit(*first, batch_size=4, epochs=2, verbose=0, shuffle=False)
        m.fit(*data, batch_size=4, epochs=1, verbose=0, shuffle=False)
        weights.append(m.get_weights())
    for a, b in zip(*weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_a_stateful_rnn_on_an_open_length_keeps_its_states():
    # the graph at the data's length carries the layer's kept states (they started at zero every batch)
    x = np.random.default_rng(1).standard_normal((4, 5, 3)).astype("float32")
    y = np.random.default_rng(2).standard_normal((4, 2)).astype("float32")
    losses = []
    for length in (5, None):
        keras.utils.set_random_seed(0)
        inp = keras.Input(batch_shape=(4, length, 3))
        m = keras.Model(inp, keras.layers.Dense(2)(keras.layers.GRU(4, stateful=True)(inp)))
        m.compile("sgd", "mse")
        losses.append([m.train_on_batch(x, y) for _ in range(3)])
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-6)


def test_a_loss_with_an_array_constant_trains_at_every_length():
    # the loss is recorded again per length with a new constant for its array: a variant gives it a
    # region of its own (it was "holds values its first graph did not")
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(5)
    batches = [(rng.standard_normal((2, n, 3)).astype("float32"), rng.standard_normal((2, n, 4)).astype("float32"))
               for n in (3, 4, 3, 5)]
    w = np.array([1.0, 2.0, 3.0, 4.0], "float32")

    def build(k, ops):
        inp = k.Input((None, 3))
        m = k.Model(inp, k.layers.Dense(4)(inp))
        m.compile(k.optimizers.SGD(0.1), loss=lambda t, p: ops.mean(ops.square(p - t) * w, axis=-1))
        return m

    keras.utils.set_random_seed(0)
    ours, theirs = build(keras, keras.ops), build(tf.keras, tf.keras.ops)
    theirs.set_weights(ours.get_weights())
    h0 = ours.fit(_dataset(keras, batches), epochs=2, verbose=0, shuffle=False).history["loss"]
    h1 = theirs.fit(_dataset(tf.keras, batches), epochs=2, verbose=0, shuffle=False).history["loss"]
    np.testing.assert_allclose(h0, h1, rtol=1e-5)
