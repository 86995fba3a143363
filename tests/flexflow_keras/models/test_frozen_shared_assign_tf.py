"""A frozen layer shared with another model whose engine holds its variables (a feature extractor used for
predict, then frozen under a new head): a training engine that only reads them keeps a copy of their values
(execution/engine.py `attach`, since 7d8c98b). A host assignment during its fit (a callback's set_weights of
the frozen layer) must reach that copy, as in Keras, where the next step reads the assigned value; it went
only to the holder, and the fit trained its head on the old values. Compared with tf.keras 3.15."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras  # noqa: E402

pytestmark = pytest.mark.tf
RNG = np.random.default_rng(0)
X = RNG.normal(size=(32, 3)).astype("float32")
Y = RNG.normal(size=(32, 1)).astype("float32")


def _run(keras):
    inp = keras.Input((3,))
    base = keras.layers.Dense(4, name="base", kernel_initializer="ones")
    head = keras.layers.Dense(1, name="head", kernel_initializer="ones")
    features = keras.Model(inp, base(inp))
    features.predict(X, verbose=0)  # its engine takes (holds) the base's variables
    base.trainable = False
    model = keras.Model(inp, head(base(inp)))
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")

    class ZeroTheBase(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                base.set_weights([np.full((3, 4), 0.25, "float32"), np.zeros(4, "float32")])

    history = model.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[ZeroTheBase()])
    return history.history["loss"], model.get_weights(), features.predict(X, verbose=0)


def test_an_assignment_during_fit_reaches_the_engine_that_only_reads_the_layer():
    got, want = _run(flexflow_keras), _run(tf.keras)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for g, w in zip(got[1], want[1], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6)
