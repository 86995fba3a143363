"""The seam with flexflow_keras.ops.loss: the eager op gives the same per-sample values as the losses
module, and per_sample on KerasTensors records one loss node with the loss' attributes."""

import numpy as np
import pytest

from flexflow_keras import losses
from flexflow_keras.ops.graph import KerasTensor

ops = pytest.importorskip("flexflow_keras.ops")
if not hasattr(ops, "loss"):
    pytest.skip("flexflow_keras.ops.loss is not available yet", allow_module_level=True)

rng = np.random.default_rng(0)
logits = rng.standard_normal((12, 4)).astype(np.float32)
probs = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float32)
ids = rng.integers(0, 4, 12)


@pytest.mark.parametrize("loss,y_true,y_pred", [
    (losses.CategoricalCrossentropy(), np.eye(4, dtype=np.float32)[ids], probs),
    (losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1), np.eye(4, dtype=np.float32)[ids], logits),
    (losses.SparseCategoricalCrossentropy(), ids.astype(np.int32), probs),
    (losses.SparseCategoricalCrossentropy(from_logits=True), ids.astype(np.int32), logits),
    (losses.BinaryCrossentropy(), (ids[:, None] % 2).astype(np.float32), probs[:, :1]),
    (losses.BinaryCrossentropy(from_logits=True), (ids[:, None] % 2).astype(np.float32), logits[:, :1]),
    (losses.MeanSquaredError(), logits[:, :1] * 0.5, logits[:, :1]),
    (losses.MeanAbsoluteError(), logits[:, 0] * 0.5, logits[:, :1]),
])
def test_eager_op_matches_numpy_losses(loss, y_true, y_pred):
    want = loss.per_sample(y_true, y_pred)
    kwargs = {k: v for k, v in loss.get_config().items() if k in ("from_logits", "label_smoothing")}
    got = np.asarray(ops.loss(loss.name, y_true, y_pred, **kwargs))
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-6)


def test_symbolic_per_sample_records_a_loss_node():
    out = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.2).per_sample(
        KerasTensor((None, 4)), KerasTensor((None, 4)))
    assert isinstance(out, KerasTensor) and out.shape == (None,)
    op = out.node.op
    assert (op.name, op.from_logits, op.label_smoothing) == ("categorical_crossentropy", True, 0.2)


def test_calling_a_loss_on_keras_tensors_reduces_symbolically():
    out = losses.MeanSquaredError()(KerasTensor((None, 3)), KerasTensor((None, 3)))
    assert isinstance(out, KerasTensor) and out.shape == ()
    y, p = np.zeros((4, 3), np.float32), np.ones((4, 3), np.float32)
    assert float(np.asarray(ops.mean(ops.loss("mean_squared_error", y, p)))) == pytest.approx(
        float(losses.MeanSquaredError()(y, p)))
