"""tf.keras 3.15 reads batches 0 and 1 of a PyDataset to make its tf.data signature before it iterates it in
fit, evaluate and predict (PyDatasetAdapter.get_tf_dataset, NUM_BATCHES_FOR_TENSOR_SPEC = 2). A PyDataset
whose __getitem__ draws random numbers (ImageDataGenerator's augmenting iterators draw each batch's
transforms from NumPy's global state) then trains on the draws that come after those reads. Ours read
batch 0 only, so every augmented batch got the transforms of the one after it: the TensorFlow Developer
certificate's C2 W2 cats-vs-dogs augmentation lab trained on other images (loss 2e-3 apart)."""

import random

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


def _dataset(K, n_batches, log):
    class Reads(K.utils.PyDataset):
        def __len__(self):
            return n_batches

        def __getitem__(self, i):
            log.append(i)
            rng = np.random.default_rng(i)
            x = rng.random((4, 3), dtype=np.float32) + np.float32(np.random.random())  # a global draw
            return x, (x.sum(1, keepdims=True) > 2).astype(np.float32)

    return Reads()


def _reads(K, what, n_batches=5):
    np.random.seed(0)
    model = K.Sequential([K.Input((3,)), K.layers.Dense(1, activation="sigmoid")])
    model.set_weights([np.ones((3, 1), np.float32) * 0.1, np.zeros(1, np.float32)])
    model.compile(K.optimizers.SGD(0.1), "binary_crossentropy")
    log = []
    data = _dataset(K, n_batches, log)
    if what == "fit":
        out = model.fit(data, epochs=2, shuffle=False, verbose=0).history["loss"]
    elif what == "evaluate":
        out = model.evaluate(data, verbose=0)
    else:
        out = model.predict(data, verbose=0)
    return log, np.asarray(out, np.float64)


@pytest.mark.parametrize("what", ["fit", "evaluate", "predict"])
def test_pydataset_reads_and_results_as_tf_keras(what):
    want_log, want = _reads(tk, what)
    got_log, got = _reads(ff, what)
    assert want_log[:2] == [0, 1] and got_log == want_log
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_a_one_batch_pydataset_is_read_once_for_the_signature():
    want_log, _ = _reads(tk, "fit", n_batches=1)
    got_log, _ = _reads(ff, "fit", n_batches=1)
    assert got_log == want_log


def test_validation_data_is_read_for_its_signature_once_per_fit():
    """Keras keeps the validation iterator it made at the first validation: one signature read per fit."""
    logs = []
    for K in (tk, ff):
        np.random.seed(0)
        model = K.Sequential([K.Input((3,)), K.layers.Dense(1, activation="sigmoid")])
        model.compile("sgd", "binary_crossentropy")
        train, val = [], []
        model.fit(_dataset(K, 4, train), validation_data=_dataset(K, 3, val), epochs=3, shuffle=False, verbose=0)
        logs.append((train, val))
    assert logs[1] == logs[0]
    assert logs[0][1] == [0, 1] + [0, 1, 2] * 3


def _order(K, custom_step: bool, py_seed: int = 0):
    log = []
    if custom_step:
        class Step(K.Model):
            def train_step(self, data):
                return {"n": K.ops.sum(data[0])}

        inp = K.Input((3,))
        model = Step(inp, K.layers.Dense(1)(inp))
    else:
        model = K.Sequential([K.Input((3,)), K.layers.Dense(1, activation="sigmoid")])
    model.compile("sgd", "binary_crossentropy")
    random.seed(py_seed)
    model.fit(_dataset(K, 6, log), epochs=2, verbose=0)  # shuffle=True, Keras' default
    return log


@pytest.mark.parametrize("custom_step", [False, True], ids=["compiled", "train_step"])
def test_fit_shuffles_a_pydataset_with_pythons_random_as_tf_keras(custom_step):
    """Keras 3's adapter shuffles the batch order of each pass with Python's random.shuffle, so after a
    script's random.seed the order is tf.keras'; ours drew it from a NumPy generator (and a custom
    train_step's fit made no signature reads)."""
    want = _order(tk, custom_step)
    assert _order(ff, custom_step) == want and want[2:8] != list(range(6))


def test_the_seed_flag_still_fixes_the_order():
    from flexflow_keras import config

    try:
        config.set(seed=3)
        first, again = _order(ff, False), _order(ff, False, py_seed=99)  # Python's state plays no part
    finally:
        config.reset()
    assert first == again and sorted(first[2:8]) == list(range(6))
