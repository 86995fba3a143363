"""BatchNormOp with a mask (Keras 3's masked moments) through the op harness: a float64 reference,
central-difference gradients, and a 2-way batch split (statistics folded across shards, two-stage
backward) reproducing the unsplit numbers."""

import numpy as np
from op_harness import check_op

from flexflow_keras.ops.normalization import BatchNormOp

IDS = np.array([[1, 2, 0, 0, 0], [3, 0, 4, 5, 0], [6, 7, 8, 9, 1], [2, 2, 0, 0, 0]], "int32")


def test_masked_batch_norm_op_gradients_and_batch_split():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5, 3)) * 2 + 1
    m = (IDS != 0).astype(np.float64)
    w = [rng.standard_normal(3), rng.standard_normal(3), np.zeros(3), np.ones(3)]

    def ref(x, m, g, b, mm, mv):
        keep = m[..., None]
        n = keep.sum() + 1e-7
        mean = (x * keep).sum((0, 1)) / n
        var = (((x - mean) * keep) ** 2).sum((0, 1)) / n
        return (x - mean) / np.sqrt(var + 1e-3) * g + b

    check_op(BatchNormOp(2, has_mask=True), [x, m], w, training=True, shards=2, ref=ref, rtol=1e-6, atol=1e-6,
             grad_rtol=1e-4, grad_atol=1e-6)
