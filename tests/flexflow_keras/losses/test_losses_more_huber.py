"""Huber and LogCosh (losses_more.py): Keras 3's formulas, eagerly and in a training graph."""

import numpy as np
import pytest

import flexflow_keras as keras

RNG = np.random.default_rng(0)
T = RNG.standard_normal((16, 3)).astype("float32")
P = (T + 2 * RNG.standard_normal((16, 3))).astype("float32")


def test_formulas_and_names():
    x = (P - T).astype(np.float64)
    a = np.abs(x)
    huber = np.mean(np.where(a <= 1.5, 0.5 * x * x, 1.5 * (a - 0.75)), axis=-1)
    assert float(keras.losses.Huber(delta=1.5)(T, P)) == pytest.approx(huber.mean(), rel=1e-6)
    np.testing.assert_allclose(keras.losses.huber(T, P, delta=1.5), huber, rtol=1e-6)
    log_cosh = np.mean(np.log(np.cosh(x)), axis=-1)
    assert float(keras.losses.LogCosh()(T, P)) == pytest.approx(log_cosh.mean(), rel=1e-6)
    assert isinstance(keras.losses.get("huber"), keras.losses.Huber)
    assert isinstance(keras.losses.get("log_cosh"), keras.losses.LogCosh)
    assert keras.losses.Huber(delta=2.0).get_config()["delta"] == 2.0


@pytest.mark.parametrize("loss", [keras.losses.Huber(delta=0.5), "log_cosh"])
def test_they_train(loss):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3, kernel_initializer="zeros")])
    model.compile(keras.optimizers.SGD(0.1), loss)
    first = model.evaluate(T, P, verbose=0)
    ref = keras.losses.get(loss) if isinstance(loss, str) else loss
    assert first == pytest.approx(float(np.mean(np.asarray(ref(P, np.zeros_like(P))))), rel=1e-5)
    history = model.fit(T, P, epochs=5, batch_size=16, verbose=0).history["loss"]
    assert history[-1] < history[0]
