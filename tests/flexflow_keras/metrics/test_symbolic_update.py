"""A metric updated with symbolic tensors (Keras' endpoint-layer pattern) fails with one clear message."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.errors import GraphError


class _Endpoint(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.acc = keras.metrics.BinaryAccuracy(name="accuracy")

    def call(self, logits, targets):
        self.acc.update_state(targets, logits)
        return logits


def test_metric_updated_inside_call_names_the_metric():
    logits = keras.Input((1,))
    targets = keras.Input((1,))
    with pytest.raises(GraphError, match=r"Metric 'accuracy' \(BinaryAccuracy\) was updated with symbolic"):
        _Endpoint()(logits, targets)


@pytest.mark.parametrize("metric", [keras.metrics.Mean(), keras.metrics.BinaryAccuracy(),
                                    keras.metrics.MeanSquaredError()])
def test_call_and_update_state_refuse_keras_tensors(metric):
    x = keras.Input((3,))
    with pytest.raises(GraphError, match="compile\\(metrics="):
        metric(x) if isinstance(metric, keras.metrics.Mean) else metric(x, x)


def test_eager_updates_still_accumulate():
    m = keras.metrics.BinaryAccuracy()
    m.update_state(np.array([[1.0], [0.0]]), np.array([[0.9], [0.8]]))
    assert m.result() == pytest.approx(0.5)
    mean = keras.metrics.Mean()
    mean.update_state(np.array([1.0, 3.0]))
    assert mean.result() == pytest.approx(2.0)
