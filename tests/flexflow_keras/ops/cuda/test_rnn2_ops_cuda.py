"""Ops of the recurrent / masking leftovers with backend "cuda" (device arrays, under the simulator) against
backend "cpu": masked BatchNormalization and the reset-before GRU."""

import numpy as np
import pytest
from test_ops_cuda import check_cuda, r

from flexflow_keras.ops.normalization import BatchNormOp
from flexflow_keras.ops.recurrent import RecurrentOp


@pytest.mark.parametrize("training", [True, False])
def test_masked_batch_norm(training):
    mask = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1]], np.float64)
    check_cuda(BatchNormOp(2, has_mask=True), [r(3, 3, 4), mask], [r(4), r(4), r(4) * 0.1, np.abs(r(4)) + 0.5],
               training=training, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("cell", ["gru", "gru_reset_before"])
def test_gru_reset_before(cell):
    mask = np.array([[1, 1, 0], [0, 1, 1]], np.float64)
    op = RecurrentOp(cell=cell, units=2, has_mask=True, n_initial=1, return_sequences=True,
                     go_backwards=True)
    bias = r(2, 6) if cell == "gru" else r(6)
    # tolerances as the recurrent kernel tests (run_pair): the device path rounds differently (~2e-7 absolute)
    check_cuda(op, [r(2, 3, 3), mask, r(2, 2)], [r(3, 6), r(2, 6), bias], rtol=1e-5, atol=1e-6)
