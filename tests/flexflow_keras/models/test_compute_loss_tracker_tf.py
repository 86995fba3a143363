"""keras.io's masked language model pattern: a compute_loss override handed the sample weights, which
updates its own loss tracker there (compute_metrics returns it), trained and evaluated here and by Keras
3 on TensorFlow from the same initial weights: the logged losses and the final weights agree, at
data-parallel degrees 1 and 2."""

import os

import numpy as np
import pytest

import flexflow_keras as ff
from flexflow_keras import config

V, L, D, N, B = 13, 6, 5, 24, 8


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, V, size=(N, L)).astype("int32")
    y = rng.integers(1, V, size=(N, L)).astype("int32")
    sw = (rng.random((N, L)) < 0.3).astype("float32")  # the masked positions weigh 1, the others 0
    return x, y, sw


def _mlm(k):
    """The keras.io masked language model's classes on a small Embedding + Dense model, for module `k`
    (flexflow_keras or keras)."""
    loss_fn = k.losses.SparseCategoricalCrossentropy(reduction=None)
    loss_tracker = k.metrics.Mean(name="loss")

    class MaskedLanguageModel(k.Model):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
            loss = loss_fn(y, y_pred, sample_weight)
            loss_tracker.update_state(loss, sample_weight=sample_weight)
            return k.ops.sum(loss)

        def compute_metrics(self, x, y, y_pred, sample_weight):
            return {"loss": loss_tracker.result()}

        @property
        def metrics(self):
            return [loss_tracker]

    inp = k.Input((L,), dtype="int32")
    h = k.layers.Embedding(V, D)(inp)
    out = k.layers.Dense(V, activation="softmax")(h)
    model = MaskedLanguageModel(inp, out)
    model.compile(optimizer=k.optimizers.Adam(learning_rate=0.01))
    return model


def _held(k):
    """A model that holds its trackers (the keras.io guides' ``self.loss_tracker``) and updates them in
    compute_loss, without a compute_metrics override: Keras logs them by name, its own "loss" replaced."""

    class Held(k.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_tracker = k.metrics.Mean(name="loss")
            self.acc = k.metrics.SparseCategoricalAccuracy(name="acc")

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
            per = k.losses.sparse_categorical_crossentropy(y, y_pred)
            loss = k.ops.mean(per)
            self.loss_tracker.update_state(per, sample_weight=sample_weight)
            self.acc.update_state(y, y_pred, sample_weight=sample_weight)
            return loss

    inp = k.Input((4,))
    out = k.layers.Dense(3, activation="softmax")(k.layers.Dense(8, activation="tanh")(inp))
    model = Held(inp, out)
    model.compile(optimizer=k.optimizers.SGD(learning_rate=0.1))
    return model


@pytest.fixture(scope="module")
def tf_keras():
    pytest.importorskip("tensorflow")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("Keras is not on the TensorFlow backend")
    return keras


@pytest.fixture(params=[1, 2], ids=["dp1", "dp2"])
def degree(request):
    config.set(data_parallel_degree=request.param)
    yield request.param
    config.set(data_parallel_degree=1)


def _both(make, tf_keras, seed=3):
    ours, theirs = make(ff), make(tf_keras)
    tf_keras.utils.set_random_seed(seed)
    theirs = make(tf_keras)
    ours.set_weights(theirs.get_weights())
    return ours, theirs


def _same_weights(ours, theirs):
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_masked_language_model_trains_and_logs_as_keras(tf_keras, degree):
    x, y, sw = _data()
    ours, theirs = _both(_mlm, tf_keras)
    h1 = ours.fit(x, y, sample_weight=sw, batch_size=B, epochs=3, shuffle=False, verbose=0).history
    h2 = theirs.fit(x, y, sample_weight=sw, batch_size=B, epochs=3, shuffle=False, verbose=0).history
    assert sorted(h1) == sorted(h2) == ["loss"]
    np.testing.assert_allclose(h1["loss"], h2["loss"], rtol=1e-5)
    _same_weights(ours, theirs)
    got = ours.evaluate(x, y, sample_weight=sw, batch_size=B, verbose=0, return_dict=True)
    want = theirs.evaluate(x, y, sample_weight=sw, batch_size=B, verbose=0, return_dict=True)
    assert got.keys() == want.keys()
    assert got["loss"] == pytest.approx(want["loss"], rel=1e-5)


def test_masked_language_model_from_batches_yielding_weights(tf_keras):
    x, y, sw = _data(1)
    ours, theirs = _both(_mlm, tf_keras, seed=4)

    class Batches:  # a dataset: a fresh pass each epoch
        def __iter__(self):
            for i in range(0, N, B):
                yield x[i:i + B], y[i:i + B], sw[i:i + B]

    batches = Batches
    h1 = ours.fit(Batches(), epochs=2, verbose=0).history
    h2 = theirs.fit(x, y, sample_weight=sw, batch_size=B, epochs=2, shuffle=False, verbose=0).history
    np.testing.assert_allclose(h1["loss"], h2["loss"], rtol=1e-5)
    _same_weights(ours, theirs)
    assert ours.evaluate(batches(), verbose=0) == pytest.approx(
        theirs.evaluate(x, y, sample_weight=sw, batch_size=B, verbose=0), rel=1e-5)


def test_held_trackers_with_class_weight_log_as_keras(tf_keras, degree):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(32, 4)).astype("float32")
    y = rng.integers(0, 3, size=(32,)).astype("int32")
    ours, theirs = _both(_held, tf_keras, seed=6)
    cw = {0: 1.0, 1: 2.5, 2: 0.5}
    h1 = ours.fit(x, y, class_weight=cw, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    h2 = theirs.fit(x, y, class_weight=cw, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    assert sorted(h1) == sorted(h2) == ["acc", "loss"]
    for key in h2:
        np.testing.assert_allclose(h1[key], h2[key], rtol=1e-5, err_msg=key)
    _same_weights(ours, theirs)
    got = ours.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    want = theirs.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-5), key


def test_a_tracker_updated_in_a_layer_call_is_still_refused():
    class Endpoint(ff.layers.Layer):
        def __init__(self):
            super().__init__()
            self.mean = ff.metrics.Mean(name="m")

        def call(self, x):
            self.mean.update_state(x)
            return x

    from flexflow_keras.errors import GraphError

    with pytest.raises(GraphError, match="Metric 'm'"):
        Endpoint()(ff.Input((3,)))
