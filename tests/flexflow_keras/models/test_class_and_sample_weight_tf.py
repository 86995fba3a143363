"""fit and train_on_batch refuse class_weight together with sample_weight, as tf.keras 3.15 does ("You
cannot `class_weight` and `sample_weight` at the same time"); before, the two were multiplied silently."""

import numpy as np
import pytest

import flexflow_keras as ff

rng = np.random.default_rng(0)
X = rng.normal(size=(16, 4)).astype("float32")
Y = rng.integers(0, 3, size=(16,))
SW = np.linspace(0.1, 2, 16).astype("float32")
CW = {0: 1.0, 1: 2.0, 2: 0.5}


def _outcomes(lib):
    inp = lib.Input((4,))
    model = lib.Model(inp, lib.layers.Dense(3, activation="softmax")(inp))
    model.compile(lib.optimizers.SGD(0.1), "sparse_categorical_crossentropy")
    out = []
    for call in (lambda: model.fit(X, Y, class_weight=CW, sample_weight=SW, verbose=0),
                 lambda: model.train_on_batch(X, Y, class_weight=CW, sample_weight=SW)):
        try:
            call()
            out.append("accepted")
        except ValueError:
            out.append("ValueError")
    return out


def test_class_weight_with_sample_weight_is_refused_as_tf_keras():
    tf = pytest.importorskip("tensorflow")
    assert _outcomes(ff) == _outcomes(tf.keras) == ["ValueError", "ValueError"]
    inp = ff.Input((4,))
    model = ff.Model(inp, ff.layers.Dense(3, activation="softmax")(inp))
    model.compile("sgd", "sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="both class_weight and sample_weight"):
        model.fit(X, Y, class_weight=CW, sample_weight=SW, verbose=0)


def _stream_outcome(lib):
    class Batches(lib.utils.PyDataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return X[i * 8:(i + 1) * 8], Y[i * 8:(i + 1) * 8], SW[i * 8:(i + 1) * 8]

    inp = lib.Input((4,))
    model = lib.Model(inp, lib.layers.Dense(3, activation="softmax")(inp))
    model.compile("sgd", "sparse_categorical_crossentropy")
    try:
        model.fit(Batches(), class_weight=CW, epochs=1, verbose=0)
    except ValueError:
        return "ValueError"
    return "accepted"


def test_class_weight_with_weighted_batches_is_refused_as_tf_keras():
    tf = pytest.importorskip("tensorflow")
    assert _stream_outcome(ff) == _stream_outcome(tf.keras) == "ValueError"
