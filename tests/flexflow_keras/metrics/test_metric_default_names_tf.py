"""Default metric names as Keras 3.15 gives them: `Mean` and `Sum` have fixed defaults ("mean", "sum"), never
numbered, while a metric whose constructor defaults to name=None is auto-named per process (precision,
precision_1, ...), a `MeanMetricWrapper` after its class, not its function. We numbered Mean and Sum (mean_1)
and named an unnamed wrapper after its function, so trackers and history keys differed from tf.keras."""

import numpy as np
import pytest

import flexflow_keras


def _mae(y_true, y_pred):
    return np.mean(np.abs(np.asarray(y_true) - np.asarray(y_pred)), axis=-1)



def _names(lib):
    lib.backend.clear_session()

    class Running(lib.metrics.Mean):
        pass

    made = [lib.metrics.Mean(), lib.metrics.Mean(), lib.metrics.Sum(), lib.metrics.Sum(), Running(), Running(),
            lib.metrics.MeanMetricWrapper(_mae), lib.metrics.MeanMetricWrapper(fn=_mae),
            lib.metrics.MeanMetricWrapper(_mae, name="m"), lib.metrics.Precision(), lib.metrics.Precision(),
            lib.metrics.Mean(name="loss")]
    return [m.name for m in made]


def test_mean_and_sum_keep_their_default_names():
    names = _names(flexflow_keras)
    assert names[:6] == ["mean", "mean", "sum", "sum", "mean", "mean"]
    assert names[6:9] == ["mean_metric_wrapper", "mean_metric_wrapper_1", "m"]


def test_default_names_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    assert _names(flexflow_keras) == _names(keras)


def _history_keys(lib):
    lib.backend.clear_session()

    class Tracked(lib.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = lib.layers.Dense(1)
            self.a = lib.metrics.Mean()
            self.b = lib.metrics.Sum()

        def call(self, x):
            return self.dense(x)

        def compute_metrics(self, x, y, y_pred, sample_weight=None):
            logs = super().compute_metrics(x, y, y_pred, sample_weight)
            self.a.update_state(y_pred)
            self.b.update_state(y_pred)
            return logs

    rng = np.random.default_rng(0)
    x, y = rng.random((16, 3)).astype("float32"), rng.random((16, 1)).astype("float32")
    lib.metrics.Mean(), lib.metrics.Sum()  # made before the model's: Keras still names its own "mean", "sum"
    model = Tracked()
    model.compile("sgd", "mse")
    return sorted(model.fit(x, y, epochs=1, batch_size=8, verbose=0).history), [m.name for m in (model.a, model.b)]


def test_history_keys_of_unnamed_trackers_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    assert _history_keys(flexflow_keras) == _history_keys(keras)
