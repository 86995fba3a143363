"""`optimizer.iterations` with `gradient_accumulation_steps` counts the applied updates, as Keras 3's property
(its `_iterations` // steps): keras.io's vocal track separation (Adam(gradient_accumulation_steps=2)) read 12
after 12 training steps where tf.keras reads 6, with equal weights. The training steps still drive the learning
rate schedule and are what a saved file holds, as in Keras; a reloaded optimizer continues alike."""

import numpy as np
import pytest

import flexflow_keras

pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
pytestmark = pytest.mark.tf
RS = np.random.RandomState(0)
X, Y = RS.rand(24, 4).astype("float32"), RS.rand(24, 2).astype("float32")


def _model(lib):
    m = lib.Sequential([lib.Input((4,)), lib.layers.Dense(2)])
    m.set_weights([np.random.RandomState(i).randn(*w.shape).astype("float32") for i, w in enumerate(m.get_weights())])
    lr = lib.optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)
    m.compile(lib.optimizers.Adam(lr, gradient_accumulation_steps=2), "mse")
    return m


def _run(lib, path):
    m = _model(lib)
    m.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0)  # 12 training steps, 6 updates
    m.save(path)
    return [int(m.optimizer.iterations), float(m.optimizer.learning_rate)], m.get_weights()


def test_iterations_count_updates_as_keras(tmp_path):
    ours, w_ours = _run(flexflow_keras, str(tmp_path / "ff.keras"))
    assert ours[0] == 6
    theirs, w_theirs = _run(keras, str(tmp_path / "tf.keras"))
    assert ours == pytest.approx(theirs, rel=1e-6)  # the schedule reads the 12 training steps in both
    for a, b in zip(w_ours, w_theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    again = flexflow_keras.saving.load_model(str(tmp_path / "ff.keras"))
    assert int(again.optimizer.iterations) == 6  # the file holds the training steps (12), as Keras' does
    again.fit(X[:12], Y[:12], batch_size=4, epochs=1, shuffle=False, verbose=0)  # 3 more steps: 1 update, 1 held
    assert int(again.optimizer.iterations) == 7
    assert float(again.optimizer.learning_rate) == pytest.approx(0.1 * 0.5 ** (15 / 2), rel=1e-6)
