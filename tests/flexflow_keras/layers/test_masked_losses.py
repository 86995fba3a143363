"""Losses and metrics on an output that carries a Keras mask (Keras 3): the loss is the mean over the
unmasked entries, every metric counts only unmasked entries (weighted metrics also weigh them by the
sample weights), and a fully masked batch contributes nothing; against a NumPy reference, against
tf.keras on copied weights (evaluate and one training step), and under data parallelism."""

import numpy as np
import pytest
from ff_layer_harness import tf_keras

import flexflow_keras as ff
from flexflow_keras import layers, optimizers

IDS = np.array([[1, 2, 0, 0, 0], [3, 0, 4, 5, 0], [6, 7, 8, 9, 1], [2, 2, 0, 0, 0]], "int32")
LABELS = np.array([[1, 0, 2, 2, 1], [0, 1, 2, 0, 1], [2, 2, 1, 0, 1], [1, 1, 0, 2, 2]], "int32")


def _build(lib, sequence_model="dense"):
    inp = lib.layers.Input((5,), dtype="int32")
    x = lib.layers.Embedding(10, 4, mask_zero=True)(inp)
    if sequence_model == "lstm":
        x = lib.layers.LSTM(6, return_sequences=True)(x)
    else:
        x = lib.layers.Dense(6, activation="tanh")(x)
    return lib.Model(inp, lib.layers.Dense(3, activation="softmax")(x))


@pytest.fixture(autouse=True)
def _no_search(request):
    ff.config.set(only_data_parallel=True)
    request.addfinalizer(ff.config.reset)


def _numpy_reference(model):
    probs = model.predict(IDS, verbose=0).astype(np.float64)
    per = -np.log(np.take_along_axis(probs, LABELS[..., None], -1)[..., 0])
    mask = IDS != 0
    acc = (probs.argmax(-1) == LABELS)
    return per[mask].mean(), acc[mask].mean(), per, mask


def test_loss_and_accuracy_count_only_unmasked_steps():
    model = _build(ff)
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    loss, acc, _, _ = _numpy_reference(model)
    got = model.evaluate(IDS, LABELS, batch_size=4, verbose=0, return_dict=True)
    assert got["loss"] == pytest.approx(loss, rel=1e-5)
    assert got["accuracy"] == pytest.approx(acc, rel=1e-6)


def test_weighted_metrics_see_mask_and_sample_weights():
    model = _build(ff)
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", weighted_metrics=["accuracy"])
    sw = np.array([1.0, 2.0, 0.5, 3.0], "float32")
    _, _, per, mask = _numpy_reference(model)
    probs = model.predict(IDS, verbose=0)
    w = mask * sw[:, None]
    want_loss = (per * w).sum() * (mask.size / mask.sum()) / mask.size  # Keras: sum(l * sw * total/valid) / total
    want_acc = ((probs.argmax(-1) == LABELS) * w).sum() / w.sum()
    got = model.evaluate(IDS, LABELS, sample_weight=sw, batch_size=4, verbose=0, return_dict=True)
    assert got["loss"] == pytest.approx(want_loss, rel=1e-5)
    assert got["accuracy"] == pytest.approx(want_acc, rel=1e-6)


def test_a_fully_masked_batch_adds_nothing_and_stays_finite():
    model = _build(ff)
    model.compile(optimizer=optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    before = [w.copy() for w in model.get_weights()]
    hist = model.fit(np.zeros_like(IDS), LABELS, batch_size=4, epochs=1, verbose=0, shuffle=False)
    assert hist.history["loss"][0] == 0.0
    for a, b in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(a, b)


def test_data_parallel_pieces_share_one_batch_normalisation():
    """Split over two processors, each piece's loss still divides by the whole batch's valid count."""
    ff.config.set(only_data_parallel=True, cpus=2, data_parallel_degree=2)
    model = _build(ff)
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    got = model.evaluate(IDS, LABELS, batch_size=4, verbose=0, return_dict=True)
    assert "[2, 1]" in model._engine.strategy.describe()  # the loss really ran in two pieces
    loss, acc, _, _ = _numpy_reference(model)
    assert got["loss"] == pytest.approx(loss, rel=1e-5)
    assert got["accuracy"] == pytest.approx(acc, rel=1e-6)


def test_a_mask_that_cannot_match_the_loss_is_named():
    inp = layers.Input((5,), dtype="int32")
    x = layers.Embedding(10, 4, mask_zero=True)(inp)
    out = layers.Dense(3, activation="softmax", name="probs")(x)
    model = ff.Model(inp, out)
    model.compile(optimizer="sgd", loss=lambda y_true, y_pred: ff.ops.mean(y_pred, axis=(1, 2)))
    with pytest.raises(ValueError, match="Output 'probs.*' carries a mask of shape"):
        model.fit(IDS, LABELS, batch_size=4, epochs=1, verbose=0)


@pytest.mark.tf
@pytest.mark.parametrize("sequence_model", ["dense", "lstm"])
def test_masked_loss_matches_tf(sequence_model):
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    ours, theirs = _build(ff, sequence_model), _build(k, sequence_model)
    theirs.set_weights(ours.get_weights())
    for m, opt in ((ours, optimizers.SGD(0.5)), (theirs, k.optimizers.SGD(0.5))):
        m.compile(optimizer=opt, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    e_ours = ours.evaluate(IDS, LABELS, batch_size=4, verbose=0, return_dict=True)
    e_theirs = theirs.evaluate(IDS, LABELS, batch_size=4, verbose=0, return_dict=True)
    assert e_ours["loss"] == pytest.approx(e_theirs["loss"], rel=1e-5)
    assert e_ours["accuracy"] == pytest.approx(e_theirs["accuracy"], rel=1e-6)
    l_ours = ours.fit(IDS, LABELS, batch_size=4, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    l_theirs = theirs.fit(IDS, LABELS, batch_size=4, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    assert l_ours == pytest.approx(l_theirs, rel=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
