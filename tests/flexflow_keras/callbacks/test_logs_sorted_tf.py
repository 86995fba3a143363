"""Logs reach callbacks, the progress bar and evaluate(return_dict=True) sorted by name, as Keras 3's
CallbackList and trainer hand them (python_utils.pythonify_logs): evaluate printed and returned "loss"
before "accuracy" where tf.keras shows "accuracy" first. evaluate's list keeps Keras' order (loss first)."""

import numpy as np
import pytest

import flexflow_keras

RS = np.random.RandomState(0)
X, Y, Y2 = RS.rand(64, 4).astype("float32"), RS.randint(0, 3, 64), RS.rand(64, 1).astype("float32")


def _seen(lib):
    seen = {}

    class Keys(lib.callbacks.Callback):
        def on_test_batch_end(self, batch, logs=None):
            seen["test_batch"] = list(logs)

        def on_test_end(self, logs=None):
            seen["test_end"] = list(logs)

    i = lib.Input((4,))
    m = lib.Model(i, [lib.layers.Dense(3, activation="softmax", name="cls")(i), lib.layers.Dense(1, name="reg")(i)])
    m.set_weights([np.full(w.shape, 0.1, "float32") for w in m.get_weights()])
    m.compile("sgd", ["sparse_categorical_crossentropy", "mse"], metrics=[["accuracy"], ["mae"]])
    values = m.evaluate(X, [Y, Y2], batch_size=32, verbose=0, callbacks=[Keys()])
    logs = m.evaluate(X, [Y, Y2], batch_size=32, verbose=0, return_dict=True)
    seen["dict"] = list(logs)
    seen["list"] = [round(float(v), 5) for v in values]
    seen["history"] = list(m.fit(X, [Y, Y2], batch_size=32, epochs=1, verbose=0, validation_split=0.25).history)
    return seen


def test_sorted_keys_and_keras_list_order():
    seen = _seen(flexflow_keras)
    keys = ["cls_accuracy", "cls_loss", "loss", "reg_loss", "reg_mae"]
    assert seen["dict"] == seen["test_end"] == seen["test_batch"] == keys
    assert seen["history"] == keys + ["val_" + k for k in keys]
    assert seen["list"][0] == pytest.approx(seen["list"][1] + seen["list"][2], rel=1e-5)  # loss, cls_loss, reg_loss


def test_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _seen(flexflow_keras), _seen(keras)
    for key in ("dict", "test_end", "test_batch", "history"):
        assert ours[key] == theirs[key], key
    assert ours["list"] == pytest.approx(theirs["list"], rel=1e-4)
