"""tf.keras 3.15 resets its epoch iterator once after making it (fit, evaluate) and before every evaluation
pass, which calls a PyDataset's on_epoch_end(): fit reads batches 0 and 1 for its signature, ends that
"epoch", then iterates; a fit's validation and evaluate do the same before each pass (predict does not).
An ImageDataGenerator iterator draws a new sample order (np.random.permutation) in on_epoch_end, so ours,
which skipped those calls, shuffled flow_from_directory's batches and drew the augmentations in another
order than tf.keras after a script's np.random.seed (ZTM TensorFlow course notebook 03: the 10-class CNNs'
first epoch accuracy 0.08 against 0.14)."""

import random

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


def _events(K, custom_step: bool):
    calls = []

    class Data(K.utils.PyDataset):
        def __init__(self, name, n):
            super().__init__()
            self.name, self.n = name, n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            calls.append(f"{self.name}[{i}]")
            return np.full((4, 3), i, np.float32), np.ones((4, 1), np.float32)

        def on_epoch_begin(self):
            calls.append(f"{self.name}.begin")

        def on_epoch_end(self):
            calls.append(f"{self.name}.end")

    class Marks(K.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            calls.append(f"EPOCH{epoch}")

        def on_test_begin(self, logs=None):
            calls.append("TEST")

    if custom_step:
        class Step(K.Model):
            def train_step(self, data):
                return {"n": K.ops.sum(data[0])}

        inp = K.Input((3,))
        model = Step(inp, K.layers.Dense(1)(inp))
    else:
        model = K.Sequential([K.Input((3,)), K.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(Data("t", 3), validation_data=Data("v", 2), epochs=2, shuffle=False, verbose=0, callbacks=[Marks()])
    if not custom_step:
        calls.append("|")
        model.evaluate(Data("e", 3), verbose=0)
        calls.append("|")
        model.predict(Data("p", 3), verbose=0)
    return calls


@pytest.mark.parametrize("custom_step", [False, True], ids=["compiled", "train_step"])
def test_pydataset_epoch_hooks_as_tf_keras(custom_step):
    want = _events(tk, custom_step)
    assert want[:4] == ["t[0]", "t[1]", "t.end", "EPOCH0"]  # the reset after the signature reads
    assert _events(ff, custom_step) == want


def _augmented_fit(K):
    rng = np.random.default_rng(0)
    x = rng.random((20, 6, 6, 3), dtype=np.float32)
    y = (x[:, :, :3].mean((1, 2, 3)) > x[:, :, 3:].mean((1, 2, 3))).astype(np.float32)
    image = tf.keras.preprocessing.image if K is tk else ff.preprocessing.image  # Keras 3 keeps it under tf.keras
    gen = image.ImageDataGenerator(horizontal_flip=True)
    model = K.Sequential([K.Input((6, 6, 3)), K.layers.Flatten(), K.layers.Dense(1, activation="sigmoid")])
    model.set_weights([np.linspace(-1, 1, 108, dtype=np.float32).reshape(108, 1), np.zeros(1, np.float32)])
    model.compile(K.optimizers.SGD(0.5), "binary_crossentropy")
    np.random.seed(1)
    random.seed(1)  # fit's batch order (Keras' adapter shuffles it with Python's random)
    history = model.fit(gen.flow(x, y, batch_size=8, shuffle=True), epochs=3, verbose=0,
                        validation_data=gen.flow(x[:10], y[:10], batch_size=4, shuffle=True)).history
    return np.array([history["loss"], history["val_loss"]], np.float64), np.random.random()


def test_shuffled_augmented_flow_trains_as_tf_keras():
    (want, want_next), (got, got_next) = _augmented_fit(tk), _augmented_fit(ff)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert got_next == want_next  # NumPy's global state left where tf.keras leaves it
