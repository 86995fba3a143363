"""A model used as a layer brings its layers' losses (ActivityRegularization, an activity_regularizer) to
the calling model, as tf.keras 3.15: Hands-On ML ch17's sparse autoencoders put them in the encoder
Sequential inside the autoencoder Sequential. Ours dropped them: evaluate reported the MSE without the
penalty (0.3675 for TF's 0.3823), and a custom activity regularizer did not train."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
X = np.random.default_rng(0).random((24, 6, 4)).astype("float32")


def _model(lib, kind):
    class MeanKL(lib.regularizers.Regularizer):
        def __call__(self, x):
            m = lib.ops.mean(x, axis=0)
            return 0.05 * lib.ops.sum(0.1 * lib.ops.log(0.1 / m) + 0.9 * lib.ops.log(0.9 / (1 - m)))

    dense = (lib.layers.Dense(12, activation="sigmoid", activity_regularizer=MeanKL()) if kind == "kl"
             else lib.layers.Dense(12, activation="sigmoid"))
    enc = [lib.layers.Flatten(), dense]
    if kind == "l1":
        enc.append(lib.layers.ActivityRegularization(l1=1e-2))
    encoder = lib.Sequential(enc)
    decoder = lib.Sequential([lib.layers.Dense(24), lib.layers.Reshape([6, 4])])
    if kind == "functional":
        inp = lib.Input((6, 4))
        h = lib.layers.Flatten()(inp)
        encoder = lib.Model(inp, lib.layers.ActivityRegularization(l2=1e-2)(lib.layers.Dense(12)(h)))
    model = lib.Sequential([encoder, decoder])
    model.build((None, 6, 4))
    model.compile(loss="mse", optimizer=lib.optimizers.SGD(0.5))
    return model


@pytest.mark.parametrize("kind", ["l1", "kl", "functional"])
def test_nested_losses_evaluate_and_train_as_tf_keras(kind):
    ours, theirs = _model(ff, kind), _model(keras_ref, kind)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours.evaluate(X, X, batch_size=8, verbose=0),
                               theirs.evaluate(X, X, batch_size=8, verbose=0), rtol=1e-5)
    h1 = ours.fit(X, X, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(X, X, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
