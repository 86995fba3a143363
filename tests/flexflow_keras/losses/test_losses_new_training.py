"""The focal crossentropies, Poisson, Dice, Tversky and the generalized crossentropy in a training graph:
compile/fit lowers them, evaluate (with and without sample weights) equals the eager formula on the
model's predictions, also split over two data-parallel pieces; and their argument errors."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, losses

RNG = np.random.default_rng(11)
X = RNG.standard_normal((32, 5)).astype(np.float32)
SW = RNG.uniform(0.2, 2.0, 32).astype(np.float32)
BINARY = (X[:, :2] > 0).astype(np.float32)
IDS = ((X[:, 0] > 0).astype(np.int32) + (X[:, 1] > 0.5)).astype(np.int32)
ONEHOT = np.eye(3, dtype=np.float32)[IDS]
COUNTS = RNG.poisson(np.exp(0.3 * X[:, :2])).astype(np.float32)
MASKS = (X[:, :4] > 0).astype(np.float32)

# (loss, output units, output activation, labels)
CASES = [
    (losses.BinaryFocalCrossentropy(), 2, "sigmoid", BINARY),
    (losses.BinaryFocalCrossentropy(from_logits=True, apply_class_balancing=True, label_smoothing=0.1), 2, None,
     BINARY),
    ("binary_focal_crossentropy", 2, "sigmoid", BINARY),
    (losses.CategoricalFocalCrossentropy(), 3, "softmax", ONEHOT),
    (losses.CategoricalFocalCrossentropy(from_logits=True, alpha=[0.2, 0.3, 0.5]), 3, None, ONEHOT),
    ("poisson", 2, "softplus", COUNTS),
    ("poisson", 1, "softplus", COUNTS[:, 0]),  # labels (N,) for an output (N, 1): element by element
    ("dice", 4, "sigmoid", MASKS),  # axis=None: one value for the whole batch
    (losses.Dice(axis=(1,)), 4, "sigmoid", MASKS),
    (losses.Tversky(alpha=0.3, beta=0.7), 4, "sigmoid", MASKS),
    (losses.CategoricalGeneralizedCrossEntropy(q=0.4), 3, "softmax", IDS),
    ("hinge", 1, None, BINARY[:, 0]),  # an older composed loss, now also element by element for (N,) labels
]
NAMES = [f"{c[0] if isinstance(c[0], str) else type(c[0]).__name__}-{i}" for i, c in enumerate(CASES)]


PIECES = {1: {"data_parallel_degree": 1}, 2: {"only_data_parallel": True, "cpus": 2, "data_parallel_degree": 2}}


@pytest.fixture(params=sorted(PIECES), ids=["one_piece", "two_pieces"])
def degree(request):
    config.set(**PIECES[request.param])
    yield request.param
    config.reset()


def _model(units, activation):
    keras.utils.set_random_seed(1)
    return keras.Sequential([keras.Input((5,)), keras.layers.Dense(units, activation=activation)])


@pytest.mark.parametrize("loss,units,activation,y", CASES, ids=NAMES)
def test_evaluate_equals_the_eager_loss_and_fit_lowers_it(loss, units, activation, y, degree):
    model = _model(units, activation)
    model.compile(keras.optimizers.SGD(0.1), loss)
    plain = model.evaluate(X, y, batch_size=32, verbose=0)
    weighted = model.evaluate(X, y, sample_weight=SW, batch_size=32, verbose=0)
    if degree == 2:
        assert "[2, 1]" in model._engine.strategy.describe()  # the loss really ran in two pieces
    pred = model.predict(X, verbose=0)
    eager = losses.get(loss)
    assert plain == pytest.approx(float(eager(y, pred)), rel=1e-5, abs=1e-6)
    assert weighted == pytest.approx(float(eager(y, pred, sample_weight=SW)), rel=1e-5, abs=1e-6)
    history = model.fit(X, y, epochs=6, batch_size=32, verbose=0).history["loss"]
    assert history[-1] < history[0]


def test_a_batch_wide_dice_is_the_batch_mean_over_several_batches():
    """axis=None: Keras computes one Dice value per batch; evaluate averages them by batch size."""
    config.set(data_parallel_degree=1)
    try:
        model = _model(4, "sigmoid")
        model.compile("sgd", "dice")
        got = model.evaluate(X, MASKS, batch_size=8, verbose=0)
        pred = model.predict(X, verbose=0)
        per_batch = [float(losses.dice(MASKS[i:i + 8], pred[i:i + 8])) for i in range(0, 32, 8)]
        assert got == pytest.approx(np.mean(per_batch), rel=1e-5)
        assert got != pytest.approx(float(losses.dice(MASKS, pred)), rel=1e-6)  # not the whole set's Dice
    finally:
        config.reset()


def test_argument_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"CategoricalGeneralizedCrossEntropy expects q.*\(0, 1\).*received q=1"):
        losses.CategoricalGeneralizedCrossEntropy(q=1)
    with pytest.raises(ValueError, match=r"q > 0.*received q=0"):
        losses.categorical_generalized_cross_entropy(IDS, ONEHOT, q=0)
    with pytest.raises(ValueError, match=r"Dice expects axis.*received axis='all'"):
        losses.Dice(axis="all")
    with pytest.raises(ValueError, match=r"integer axis.*received axis=True"):
        losses.BinaryFocalCrossentropy(axis=True)
    with pytest.raises(ValueError, match=r"'circle' of Keras 3 is not implemented in flexflow_keras"):
        losses.get("circle")
    with pytest.raises(AttributeError, match=r"keras.losses.Circle is not implemented"):
        _ = losses.Circle
    assert not hasattr(losses, "Circle")


def test_labels_are_checked_as_the_loss_kind_needs():
    model = _model(3, "softmax")
    model.compile("sgd", losses.CategoricalFocalCrossentropy())
    with pytest.raises(keras.errors.DataError, match="one-hot labels"):
        model.fit(X, IDS, epochs=1, verbose=0)
