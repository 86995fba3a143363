"""The focal crossentropies, Poisson, Dice, Tversky and the generalized crossentropy (losses_focal.py,
losses_probabilistic.py, losses_overlap.py) against Keras 3 on the TensorFlow backend: reduced values with
and without sample weights, per-sample functions, configs, and string names."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from flexflow_keras import losses  # noqa: E402

pytestmark = pytest.mark.tf

rng = np.random.default_rng(7)
N, C = 12, 4
logits = (rng.standard_normal((N, C)) * 2).astype(np.float32)
probs = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float32)
ids = rng.integers(0, C, N)
onehot = np.eye(C, dtype=np.float32)[ids]
bin_t = rng.integers(0, 2, (N, 3)).astype(np.float32)
bin_p = (1 / (1 + np.exp(-logits[:, :3]))).astype(np.float32)
counts = rng.poisson(2.0, (N, 3)).astype(np.float32)
rates = rng.uniform(0.1, 4.0, (N, 3)).astype(np.float32)
masks = rng.integers(0, 2, (N, 4, 4, 1)).astype(np.float32)
soft = rng.uniform(0, 1, (N, 4, 4, 1)).astype(np.float32)
sw = rng.uniform(0.1, 2.0, N).astype(np.float32)

CASES = [
    ("BinaryFocalCrossentropy", {}, bin_t, bin_p),
    ("BinaryFocalCrossentropy", {"from_logits": True}, bin_t, logits[:, :3]),
    ("BinaryFocalCrossentropy", {"apply_class_balancing": True, "alpha": 0.4, "gamma": 3.0, "label_smoothing": 0.1},
     bin_t, bin_p),
    ("BinaryFocalCrossentropy", {"from_logits": True, "apply_class_balancing": True, "label_smoothing": 0.2},
     bin_t, logits[:, :3]),
    ("BinaryFocalCrossentropy", {}, bin_t[:, 0], bin_p[:, :1]),
    ("CategoricalFocalCrossentropy", {}, onehot, probs),
    ("CategoricalFocalCrossentropy", {"from_logits": True, "gamma": 1.5}, onehot, logits),
    ("CategoricalFocalCrossentropy", {"alpha": [0.1, 0.2, 0.3, 0.4], "label_smoothing": 0.1}, onehot, probs),
    ("Poisson", {}, counts, rates),
    ("Poisson", {"reduction": "sum"}, counts[:, 0], rates[:, :1]),
    ("Dice", {}, masks, soft),
    ("Dice", {"axis": (1, 2, 3)}, masks, soft),
    ("Dice", {"axis": [1, 2]}, masks, soft),
    ("Tversky", {"alpha": 0.3, "beta": 0.7}, masks, soft),
    ("Tversky", {"alpha": 0.7, "beta": 0.2, "axis": (1, 2, 3), "reduction": "sum"}, masks, soft),
    ("CategoricalGeneralizedCrossEntropy", {}, ids, probs),
    ("CategoricalGeneralizedCrossEntropy", {"q": 0.2, "reduction": "mean_with_sample_weight"}, ids, probs),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("name,kwargs,y_true,y_pred", CASES, ids=IDS)
def test_reduced_loss_matches_keras(name, kwargs, y_true, y_pred):
    ours, theirs = getattr(losses, name)(**kwargs), getattr(keras.losses, name)(**kwargs)
    for weights in (None, sw):
        got = float(ours(y_true, y_pred, sample_weight=weights))
        want = float(theirs(y_true, y_pred, sample_weight=weights))
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6), weights is not None


@pytest.mark.parametrize("name,kwargs,y_true,y_pred", CASES, ids=IDS)
def test_unreduced_loss_and_config_match_keras(name, kwargs, y_true, y_pred):
    kwargs = {k: v for k, v in kwargs.items() if k != "reduction"}
    ours = getattr(losses, name)(reduction=None, **kwargs)
    theirs = getattr(keras.losses, name)(reduction=None, **kwargs)
    got, want = np.asarray(ours(y_true, y_pred)), np.asarray(theirs(y_true, y_pred))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert ours.get_config() == theirs.get_config()
    again = type(ours).from_config(ours.get_config())
    assert again.get_config() == ours.get_config()
    back = losses.deserialize(losses.serialize(ours))
    assert type(back) is type(ours) and back.get_config() == ours.get_config()


@pytest.mark.parametrize("fn,y_true,y_pred,kwargs", [
    ("binary_focal_crossentropy", bin_t, logits[:, :3], {"from_logits": True, "gamma": 1.0}),
    ("binary_focal_crossentropy", bin_t, bin_p, {"apply_class_balancing": True, "axis": 0}),
    ("categorical_focal_crossentropy", onehot, probs, {"alpha": 0.5}),
    ("poisson", counts, rates, {}),
    ("dice", masks, soft, {"axis": (1, 2, 3)}),
    ("dice", masks, soft, {}),
    ("tversky", masks, soft, {"alpha": 0.2, "beta": 0.8, "axis": (1, 2)}),
    ("categorical_generalized_cross_entropy", ids, probs, {"q": 0.7}),
])
def test_per_sample_functions_match_keras(fn, y_true, y_pred, kwargs):
    got = np.asarray(getattr(losses, fn)(y_true, y_pred, **kwargs))
    want = np.asarray(getattr(keras.losses, fn)(y_true, y_pred, **kwargs))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,cls", [
    ("binary_focal_crossentropy", "BinaryFocalCrossentropy"), ("BinaryFocalCrossentropy", "BinaryFocalCrossentropy"),
    ("categorical_focal_crossentropy", "CategoricalFocalCrossentropy"), ("poisson", "Poisson"),
    ("Poisson", "Poisson"), ("dice", "Dice"), ("tversky", "Tversky"), ("Tversky", "Tversky"),
])
def test_names_keras_accepts_give_the_same_loss(name, cls):
    ours = losses.get(name)
    assert type(ours).__name__ == cls
    theirs = keras.losses.get(name)  # a function or an object, as Keras resolves it
    assert float(ours(masks.reshape(N, -1)[:, :4], soft.reshape(N, -1)[:, :4])) == pytest.approx(
        float(np.mean(theirs(masks.reshape(N, -1)[:, :4], soft.reshape(N, -1)[:, :4]))), rel=1e-5)
    assert isinstance(losses.get(getattr(losses, name)), getattr(losses, cls))  # the function or the class
