"""Synthetic data is recognised at fit after a script's usual transformations, real data is not, and
synthetic data cannot be learned perfectly (label noise)."""

import numpy as np
import pytest

from flexflow_keras import losses
from flexflow_keras.data import SyntheticSource, provenance
from flexflow_keras.datasets import _common as C
from flexflow_keras.ops.graph import TensorSpec


@pytest.fixture(autouse=True)
def _fresh():
    provenance.forget()
    yield
    provenance.forget()


def _images(n=700, classes=10, seed=0):
    rng = np.random.default_rng(seed)
    templates = C.class_templates(rng, classes, (28, 28), cell=4)
    y = rng.integers(0, classes, n).astype(np.uint8)
    return C.noisy_images(rng, templates, y), y


def test_recognised_after_reshape_astype_scale_split_and_one_hot():
    x, y = _images()
    x_train, y_train, x_test, y_test = x[:500], y[:500], x[500:], y[500:]
    flat = x_train.reshape(-1, 784).astype("float32") / 255.0
    assert provenance.synthetic_name([flat], [y_train]) is not None
    assert provenance.synthetic_name([flat[:400]], [y_train[:400]]) is not None  # validation_split
    assert provenance.synthetic_name([x_test / 255.0], [np.eye(10, dtype="float32")[y_test]]) is not None
    assert provenance.fit_note(False, [flat], [y_train]) == "synthetic"


def test_real_data_of_the_same_shape_is_not_synthetic():
    _images()
    rng = np.random.default_rng(1)
    x = rng.random((500, 784), dtype=np.float32)
    y = rng.integers(0, 10, 500)
    assert provenance.synthetic_name([x], [y]) is None
    assert provenance.fit_note(False, [x], [y]) is None
    assert provenance.fit_note(True, [x], [y]) == "synthetic"  # fit made the data itself
    x2, y2 = _images(seed=5)
    assert provenance.synthetic_name([x2[:, :14]], [y2]) is None  # other values per sample
    assert provenance.synthetic_name([x2[:8]], [y2[:8]]) is None  # too few labels to tell


def test_a_share_of_synthetic_images_shows_another_class():
    rng = np.random.default_rng(0)
    templates = C.class_templates(rng, 10, (28, 28), cell=4)
    y = rng.integers(0, 10, 4000).astype(np.uint8)
    x = C.noisy_images(rng, templates, y).reshape(4000, -1).astype(np.float64)
    flat_t = templates.reshape(10, -1).astype(np.float64)
    nearest = np.argmin(((x[:, None, :] - flat_t[None]) ** 2).sum(-1), axis=1)
    agree = float(np.mean(nearest == y))
    assert 1 - C.LABEL_NOISE - 0.03 < agree < 1 - C.LABEL_NOISE + 0.03, agree


def test_synthetic_source_cannot_be_learned_perfectly():
    src = SyntheticSource([TensorSpec((None, 16))], [TensorSpec((None, 10))], 3000,
                          loss=losses.get("sparse_categorical_crossentropy"), seed=0)
    x, y = src.x[0].astype(np.float64), src.y[0]
    onehot = np.eye(10)[y[:2000]]
    a = np.c_[x[:2000], np.ones(2000)]
    w, *_ = np.linalg.lstsq(a, onehot, rcond=None)
    acc = float(np.mean(np.argmax(np.c_[x[2000:], np.ones(1000)] @ w, axis=1) == y[2000:]))
    assert 0.8 < acc < 0.97, acc


def test_padded_synthetic_sequences_are_recognised(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    from flexflow_keras.datasets import reuters
    from flexflow_keras.utils.sequence import pad_sequences

    (x_train, y_train), (x_test, y_test) = reuters.load_data(num_words=1000)
    assert provenance.synthetic_name([pad_sequences(x_train, maxlen=50)], [y_train]) is not None
    assert provenance.synthetic_name([pad_sequences(x_test, maxlen=80)], [y_test]) is not None
    assert provenance.synthetic_name([pad_sequences(x_test, maxlen=80)], [np.roll(y_test, 7)]) is None
