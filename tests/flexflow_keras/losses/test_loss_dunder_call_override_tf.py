"""A `keras.losses.Loss` subclass that overrides ``__call__`` rather than ``call``, compiled into a model,
against tf.keras 3.15: Keras' compiled loss calls ``loss(y_true, y_pred, sample_weight)``, so the override's
value is the loss. keras.io's supervised-contrastive-learning defines its SupervisedContrastiveLoss so (a
whole-batch npairs loss); it stopped with 'SupervisedContrastiveLoss must implement call(y_true, y_pred)'."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(0)
X = rng.normal(size=(24, 6)).astype("float32")
Y = rng.integers(0, 3, (24, 1))


def _loss(lib, kind):
    ops = lib.ops

    class Contrastive(lib.losses.Loss):
        def __call__(self, labels, features, sample_weight=None):
            f = features / ops.sqrt(ops.sum(ops.square(features), axis=1, keepdims=True) + 1e-6)
            logits = ops.matmul(f, ops.transpose(f)) / 0.5
            same = ops.cast(ops.equal(labels, ops.transpose(labels)), "float32")
            same = same / ops.sum(same, axis=1, keepdims=True)
            return ops.mean(lib.losses.categorical_crossentropy(same, logits, from_logits=True))

    class Doubled(lib.losses.MeanSquaredError):  # overrides __call__ and calls the base class'
        def __call__(self, y_true, y_pred, sample_weight=None):
            return 2.0 * super().__call__(y_true, y_pred, sample_weight)

    return Contrastive() if kind == "contrastive" else Doubled()


def _model(lib, kind):
    model = lib.Sequential([lib.Input((6,)), lib.layers.Dense(8, activation="tanh"), lib.layers.Dense(4)])
    model.compile(lib.optimizers.SGD(0.1), loss=_loss(lib, kind))
    return model


@pytest.mark.parametrize("kind", ["contrastive", "doubled"])
def test_compiled_override_evaluates_and_trains_as_tf_keras(kind):
    ours, theirs = _model(ff, kind), _model(keras_ref, kind)
    ours.set_weights(theirs.get_weights())
    y = Y if kind == "contrastive" else rng.normal(size=(24, 4)).astype("float32")
    np.testing.assert_allclose(ours.evaluate(X, y, batch_size=8, verbose=0),
                               theirs.evaluate(X, y, batch_size=8, verbose=0), rtol=1e-5)
    h1 = ours.fit(X, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(X, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    p = ours.predict(X[:8], verbose=0)
    lab = Y[:8] if kind == "contrastive" else y[:8]
    np.testing.assert_allclose(float(_loss(ff, kind)(lab, p)), float(_loss(keras_ref, kind)(lab, p)), rtol=1e-5)


def test_an_override_without_call_that_calls_the_base_says_what_to_implement():
    class Broken(ff.losses.Loss):
        def __call__(self, y_true, y_pred, sample_weight=None):
            return super().__call__(y_true, y_pred, sample_weight)

    model = ff.Sequential([ff.Input((6,)), ff.layers.Dense(4)])
    model.compile("sgd", loss=Broken())
    with pytest.raises(NotImplementedError, match=r"must implement call\(y_true, y_pred\).*or __call__"):
        model.fit(X, np.zeros((24, 4), "float32"), verbose=0)
