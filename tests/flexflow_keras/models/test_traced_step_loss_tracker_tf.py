"""A train_step / test_step traced up to compute_loss that updates its loss tracker unweighted
(``metric.update_state(loss)``, keras.io's "customizing what happens in fit" guide) logs the plain mean of its
batch losses, as Keras' Mean does: a short last batch counts as a full one. flexflow_keras logged the
batch-size-weighted mean of the default step: 100 samples in batches of 32 gave 0.4915 / evaluate 0.4659
where tf.keras 3.15 gives 0.4835 / 0.5131 (models/step_hooks.loss_tracked_per_batch). Against tf.keras."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(7)
X = rng.random((100, 8)).astype("float32")
Y = rng.random((100, 1)).astype("float32")
SW = rng.random((100, 1)).astype("float32")
W = [rng.normal(size=(8, 1)).astype("float32") * 0.3, np.zeros(1, "float32")]


def _classes(lib, weighted_tracker):
    class Custom(lib.Model):
        def train_step(self, data):
            if len(data) == 3:
                x, y, sample_weight = data
            else:
                sample_weight = None
                x, y = data
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred, sample_weight=sample_weight)
            gradients = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(gradients, self.trainable_variables)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

        def test_step(self, data):
            x, y = data
            y_pred = self(x, training=False)
            loss = self.compute_loss(y=y, y_pred=y_pred)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

    class Weighted(lib.Model):  # the tracker weighted by batch size, as Keras' default step
        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred)
            gradients = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(gradients, self.trainable_variables)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss, sample_weight=tf.shape(x)[0])
                else:
                    metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

    return Weighted if weighted_tracker else Custom


def _model(lib, weighted_tracker=False):
    inp = lib.Input((8,))
    m = _classes(lib, weighted_tracker)(inp, lib.layers.Dense(1)(inp))
    m.set_weights(W)
    m.compile(optimizer="adam", loss="mse", metrics=["mae"])
    return m


def _close(got, want):
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(np.ravel(got[k]), np.ravel(want[k]), rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("weights", [False, True], ids=["plain", "sample_weight"])
def test_fit_logs_the_unweighted_tracker_as_tf_keras(weights):
    def run(lib):
        kw = {"sample_weight": SW} if weights else {}
        return _model(lib).fit(X, Y, batch_size=32, epochs=2, shuffle=False, verbose=0, **kw).history

    _close(run(ff), run(keras_ref))


def test_evaluate_and_validation_log_the_unweighted_tracker_as_tf_keras():
    def run(lib):
        m = _model(lib)
        ev = m.evaluate(X, Y, batch_size=32, verbose=0, return_dict=True)
        h = m.fit(X[:64], Y[:64], batch_size=32, epochs=1, shuffle=False, verbose=0, validation_data=(X, Y),
                  validation_batch_size=32).history
        return ev, h

    got, want = run(ff), run(keras_ref)
    _close(got[0], want[0])
    _close(got[1], want[1])


def test_a_tracker_weighted_by_batch_size_keeps_the_weighted_mean():
    def run(lib):
        return _model(lib, weighted_tracker=True).fit(X, Y, batch_size=32, epochs=1, shuffle=False,
                                                      verbose=0).history

    _close(run(ff), run(keras_ref))
