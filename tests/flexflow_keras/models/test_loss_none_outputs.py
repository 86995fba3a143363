"""Outputs without a loss (`compile(loss=[..., None])`): Keras 3 takes every output's labels, the losses'
labels only, one array, or a dict; the labels of a dataset's dict batches go to their outputs by name."""

from __future__ import annotations

import numpy as np
import pytest

import flexflow_keras as keras

N = 48


def _model(seed=3):
    keras.utils.set_random_seed(seed)
    inp = keras.Input((6,))
    h = keras.layers.Dense(8, activation="relu", name="hidden")(inp)
    a = keras.layers.Dense(3, activation="softmax", name="a")(h)
    b = keras.layers.Dense(2, name="b")(h)
    return keras.Model(inp, [a, b])


def _data():
    rng = np.random.default_rng(0)
    return (rng.normal(size=(N, 6)).astype("float32"), rng.integers(0, 3, N),
            rng.normal(size=(N, 2)).astype("float32"))


def _trained(loss, y, loss_weights=None, dataset=False):
    x, _, _ = _data()
    m = _model()
    m.compile(keras.optimizers.Adam(0.01), loss=loss, loss_weights=loss_weights)
    if dataset:
        data = [(x[k:k + 16], {key: v[k:k + 16] for key, v in y.items()}) for k in range(0, N, 16)]
        hist = m.fit(_Batches(data), epochs=2, shuffle=False, verbose=0)
    else:
        hist = m.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    return m.get_weights(), hist.history["loss"]


class _Batches(keras.utils.PyDataset):
    def __init__(self, batches):
        super().__init__()
        self.batches = batches

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, i):
        return self.batches[i]


@pytest.fixture(scope="module")
def reference():
    """loss on both outputs, the second weighted 0: the same gradients as no loss on it."""
    _, ya, yb = _data()
    return _trained(["sparse_categorical_crossentropy", "mse"], [ya, yb], loss_weights=[1.0, 0.0])


@pytest.mark.parametrize("form", ["all", "none-entry", "losses-only", "one-array", "dict", "dict-no-b"])
def test_labels_of_a_model_with_a_none_loss(reference, form):
    _, ya, yb = _data()
    y = {"all": [ya, yb], "none-entry": [ya, None], "losses-only": [ya], "one-array": ya,
         "dict": {"b": yb, "a": ya}, "dict-no-b": {"a": ya}}[form]
    weights, losses = _trained(["sparse_categorical_crossentropy", None], y)
    ref_weights, _ = reference
    for got, want in zip(weights, ref_weights, strict=True):
        np.testing.assert_array_equal(got, want)
    assert np.all(np.isfinite(losses))


def test_dict_labels_of_a_dataset_go_to_their_outputs_by_name():
    _, ya, yb = _data()
    loss = {"a": "sparse_categorical_crossentropy", "b": "mse"}
    w_list, l_list = _trained(loss, [ya, yb])
    w_ds, l_ds = _trained(loss, {"b": yb, "a": ya}, dataset=True)  # the dict's order is not the outputs'
    for got, want in zip(w_ds, w_list, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(l_ds, l_list, rtol=1e-6)


def test_a_dataset_of_a_model_with_a_none_loss(reference):
    _, ya, yb = _data()
    weights, _ = _trained(["sparse_categorical_crossentropy", None], {"a": ya}, dataset=True)
    for got, want in zip(weights, reference[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_evaluate_with_the_losses_labels_only():
    x, ya, _ = _data()
    m = _model()
    m.compile("adam", loss=["sparse_categorical_crossentropy", None], metrics=[["accuracy"], []])
    loss, acc = m.evaluate(x, [ya], verbose=0)
    probs = m.predict(x, verbose=0)[0]
    np.testing.assert_allclose(loss, -np.mean(np.log(probs[np.arange(N), ya])), rtol=1e-5)
    np.testing.assert_allclose(acc, np.mean(probs.argmax(-1) == ya), rtol=1e-6)
