"""ActivityRegularization's penalty is part of the loss that fit and evaluate report, as in Keras 3 (its value
joins the model's losses; the op's backward still gives its gradient). The logs left it out: evaluate
read 2.734 where tf.keras reads 3.511, with the same weights before and after training."""

import numpy as np
import pytest

import flexflow_keras
from flexflow_keras import config

RS = np.random.RandomState(0)
X, Y = RS.rand(40, 4).astype("float32"), RS.randint(0, 3, 40)  # 40 rows in batches of 16: a partial last batch


def _run(lib, degree=None):
    if degree is not None:
        config.reset()
        config.set(cpus=2, data_parallel_degree=degree)
    m = lib.Sequential([lib.Input((4,)), lib.layers.Dense(8, activation="relu"),
                        lib.layers.ActivityRegularization(0.01, 0.02), lib.layers.Dense(3, activation="softmax")])
    m.set_weights([np.random.RandomState(i).randn(*w.shape).astype("float32") for i, w in enumerate(m.get_weights())])
    m.compile(lib.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=["accuracy"])
    before = m.evaluate(X, Y, batch_size=16, verbose=0)[0]
    hist = m.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0).history["loss"]
    return [before, *hist, m.evaluate(X, Y, batch_size=16, verbose=0)[0]], m.get_weights()


def test_the_logged_loss_includes_the_penalty():
    logs, _ = _run(flexflow_keras, 1)
    m = flexflow_keras.Sequential([flexflow_keras.Input((4,)), flexflow_keras.layers.Dense(8, activation="relu"),
                                   flexflow_keras.layers.Dense(3, activation="softmax")])
    m.set_weights([np.random.RandomState(i).randn(*w.shape).astype("float32") for i, w in enumerate(m.get_weights())])
    m.compile("sgd", "sparse_categorical_crossentropy")
    h = np.maximum(X @ m.get_weights()[0] + m.get_weights()[1], 0).astype(np.float64)
    plain = m.evaluate(X, Y, batch_size=16, verbose=0)
    # evaluate's loss: the sample-weighted mean of each batch's loss plus its penalty (divided by its size)
    pen = sum(n * (0.01 * np.abs(h[i:i + n]).sum() + 0.02 * np.square(h[i:i + n]).sum()) / n
              for i, n in zip((0, 16, 32), (16, 16, 8), strict=True)) / 40
    assert pen > 0.1
    assert logs[0] == pytest.approx(plain + pen, rel=1e-5)


def test_two_processors_log_and_train_alike():
    one, w1 = _run(flexflow_keras, 1)
    two, w2 = _run(flexflow_keras, 2)
    assert two == pytest.approx(one, rel=1e-5)
    for a, b in zip(w1, w2, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, w_ours = _run(flexflow_keras, 1)
    theirs, w_theirs = _run(keras)
    assert ours == pytest.approx(theirs, rel=1e-5)
    for a, b in zip(w_ours, w_theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    layer = flexflow_keras.layers.ActivityRegularization(0.1, 0.2)
    layer(np.arange(6, dtype="float32").reshape(2, 3))
    assert [float(v) for v in layer.losses] == pytest.approx([6.25])
