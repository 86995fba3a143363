"""Eager loss values against tf.keras (Keras 3): per-sample functions and reduced objects."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")  # Keras 3 on the TensorFlow backend (tf.keras lacks some functions)

from flexflow_keras import losses  # noqa: E402

pytestmark = pytest.mark.tf

rng = np.random.default_rng(0)
N, C = 16, 5
logits = rng.standard_normal((N, C)).astype(np.float32) * 2
probs = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float32)
ids = rng.integers(0, C, N)
onehot = np.eye(C, dtype=np.float32)[ids]
bin_t = rng.integers(0, 2, (N, 3)).astype(np.float32)
bin_p = (1 / (1 + np.exp(-logits[:, :3]))).astype(np.float32)
reg_t = rng.standard_normal((N, 1)).astype(np.float32)
sw = rng.uniform(0.1, 2.0, N).astype(np.float32)

CASES = [
    ("CategoricalCrossentropy", dict(), onehot, probs),
    ("CategoricalCrossentropy", dict(from_logits=True), onehot, logits),
    ("CategoricalCrossentropy", dict(label_smoothing=0.1), onehot, probs),
    ("CategoricalCrossentropy", dict(from_logits=True, label_smoothing=0.2), onehot, logits),
    ("SparseCategoricalCrossentropy", dict(), ids, probs),
    ("SparseCategoricalCrossentropy", dict(), ids[:, None], probs),
    ("SparseCategoricalCrossentropy", dict(from_logits=True), ids, logits),
    ("BinaryCrossentropy", dict(), bin_t, bin_p),
    ("BinaryCrossentropy", dict(from_logits=True, label_smoothing=0.1), bin_t, logits[:, :3]),
    ("BinaryCrossentropy", dict(), bin_t[:, 0], bin_p[:, :1]),
    ("MeanSquaredError", dict(), reg_t, logits[:, :1]),
    ("MeanSquaredError", dict(), reg_t[:, 0], logits[:, :1]),
    ("MeanAbsoluteError", dict(), reg_t, logits[:, :1]),
    ("MeanAbsoluteError", dict(reduction="sum"), onehot, probs),
]


@pytest.mark.parametrize("name,kwargs,y_true,y_pred", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_reduced_loss_matches_tf(name, kwargs, y_true, y_pred):
    ours = getattr(losses, name)(**kwargs)
    theirs = getattr(keras.losses, name)(**kwargs)
    assert float(ours(y_true, y_pred)) == pytest.approx(float(theirs(y_true, y_pred)), rel=1e-5, abs=1e-6)
    got = float(ours(y_true, y_pred, sample_weight=sw))
    assert got == pytest.approx(float(theirs(y_true, y_pred, sample_weight=sw)), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("fn,y_true,y_pred,kw", [
    ("categorical_crossentropy", onehot, probs, {}),
    ("sparse_categorical_crossentropy", ids, logits, {"from_logits": True}),
    ("binary_crossentropy", bin_t, bin_p, {}),
    ("mean_squared_error", reg_t, logits[:, :1], {}),
    ("mean_absolute_error", reg_t, logits[:, :1], {}),
])
def test_per_sample_functions_match_tf(fn, y_true, y_pred, kw):
    got = getattr(losses, fn)(y_true, y_pred, **kw)
    want = np.asarray(getattr(keras.losses, fn)(y_true, y_pred, **kw))
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_extreme_probabilities_are_clipped_like_tf():
    p = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], np.float32)
    t = np.array([[0, 1, 0], [0, 0, 1]], np.float32)
    assert float(losses.CategoricalCrossentropy()(t, p)) == pytest.approx(
        float(keras.losses.CategoricalCrossentropy()(t, p)), rel=1e-5)
    assert float(losses.SparseCategoricalCrossentropy()([1, 2], p)) == pytest.approx(
        float(keras.losses.SparseCategoricalCrossentropy()(np.array([1, 2]), p)), rel=1e-5)
