"""SparseCategoricalCrossentropy(ignore_class=k) in a compiled model (keras.io's NMT transformer compiles
with ignore_class=0): the ignored entries weigh nothing and the loss is the mean over the others, as
Keras 3 computes it; an ignore_class outside the classes (-1) is never read as a class."""

import numpy as np
import pytest

import flexflow_keras as ff

X = np.array([[1, 2, 3, 0, 0], [4, 1, 0, 0, 0], [2, 2, 2, 2, 0]] * 4)


def _model(keras, ignore):
    inp = keras.Input(shape=(5,), dtype="int64")
    out = keras.layers.Dense(7, activation="softmax")(keras.layers.Embedding(7, 4)(inp))
    model = keras.Model(inp, out)
    model.compile("sgd", loss=keras.losses.SparseCategoricalCrossentropy(ignore_class=ignore))
    return model


@pytest.mark.parametrize("ignore", [0, -1])
def test_the_loss_is_the_mean_over_kept_entries(ignore):
    model = _model(ff, ignore)
    y = X if ignore == 0 else np.where(X == 0, -1, X)
    probs = model.predict(X, verbose=0)
    keep = y != ignore
    picked = np.take_along_axis(probs, np.where(keep, y, 0)[..., None], axis=-1)[..., 0]
    want = -np.log(picked)[keep].mean()
    assert model.evaluate(X, y, verbose=0) == pytest.approx(want, rel=1e-5)
    hist = model.fit(X, y, epochs=3, batch_size=4, verbose=0).history["loss"]
    assert np.isfinite(hist).all()


def test_training_follows_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _model(ff, 0), _model(keras, 0)
    theirs.set_weights(ours.get_weights())
    for m, k in ((ours, ff), (theirs, keras)):  # the metric counts every entry: ignore_class masks the loss only
        m.compile("sgd", loss=k.losses.SparseCategoricalCrossentropy(ignore_class=0), metrics=["accuracy"])
    a, b = ours.evaluate(X, X, verbose=0), theirs.evaluate(X, X, verbose=0)
    np.testing.assert_allclose(a, b, rtol=1e-5)
    a = ours.fit(X, X, epochs=3, batch_size=4, shuffle=False, verbose=0).history["loss"]
    b = theirs.fit(X, X, epochs=3, batch_size=4, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(a, b, rtol=1e-4)
