"""`activity_regularizer`, the constructor argument every Keras layer takes, against tf.keras 3.15: Keras 3
adds ``regularizer(output) / batch_size`` to the layer's losses at every call (layers/activity_penalty.py).
It was refused ('activity_regularizer is not supported'); keras.io's pointnet puts its orthogonal
regularizer on a Dense that way. The built-in L1/L2/L1L2 and a Regularizer subclass written in keras.ops
evaluate and train as tf.keras, with a partial last batch; eager calls fill `layer.losses`; the config
round-trips. MultiHeadAttention, where Keras applies it to every projection, refuses it by name."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(0)
X = rng.normal(size=(10, 6, 3)).astype("float32")
Y = rng.normal(size=(10, 1)).astype("float32")


def _model(lib):
    class MeanSquare(lib.regularizers.Regularizer):
        def __call__(self, x):
            return 0.1 * lib.ops.mean(lib.ops.square(x))

    inp = lib.Input((6, 3))
    h = lib.layers.Conv1D(4, 3, activation="tanh", activity_regularizer=lib.regularizers.L2(0.05))(inp)
    h = lib.layers.Flatten()(h)
    h = lib.layers.Dense(5, activity_regularizer=MeanSquare())(h)
    h = lib.layers.Activation("relu", activity_regularizer="l1")(h)
    out = lib.layers.Dense(1, activity_regularizer=lib.regularizers.L1L2(0.01, 0.02))(h)
    return lib.Model(inp, out)


def test_penalties_evaluate_and_train_as_tf_keras():
    ours, theirs = _model(ff), _model(keras_ref)
    ours.set_weights(theirs.get_weights())
    for m, lib in ((ours, ff), (theirs, keras_ref)):
        m.compile(lib.optimizers.SGD(0.05), "mse")
    np.testing.assert_allclose(ours.evaluate(X, Y, batch_size=4, verbose=0),
                               theirs.evaluate(X, Y, batch_size=4, verbose=0), rtol=1e-5)
    h1 = ours.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_eager_losses_and_config_equal_tf_keras():
    x = rng.normal(size=(4, 3)).astype("float32")
    kernel = rng.normal(size=(3, 2)).astype("float32")
    got = []
    for lib in (ff, keras_ref):
        layer = lib.layers.Dense(2, activity_regularizer=lib.regularizers.L1L2(0.3, 0.5), use_bias=False)
        layer(x)
        layer.set_weights([kernel])
        layer(x)
        got.append(([float(v) for v in layer.losses], layer.get_config()["activity_regularizer"]))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-5)
    assert got[0][1]["class_name"] == got[1][1]["class_name"] == "L1L2"
    np.testing.assert_allclose([got[0][1]["config"]["l1"], got[0][1]["config"]["l2"]],
                               [got[1][1]["config"]["l1"], got[1][1]["config"]["l2"]], rtol=1e-6)
    again = ff.layers.Dense.from_config(ff.layers.Dense(2, activity_regularizer="l2").get_config())
    assert isinstance(again.activity_regularizer, ff.regularizers.L2)
    assert "activity_regularizer" not in ff.layers.Dense(2).get_config()


def test_multi_head_attention_refuses_it_by_name():
    with pytest.raises(ValueError, match="MultiHeadAttention 'mha': activity_regularizer is not supported"):
        ff.layers.MultiHeadAttention(2, 4, activity_regularizer="l2", name="mha")
