"""RecurrentOp through the op harness: reference, numerical gradients, accumulate flags and a 2-way batch
split (dropout masks included) reproducing the unsplit numbers; its parallel space splits only the batch.
The harness differentiates output 0 only, so the ops here return their states only where the numerical
check is off (the kernel tests check the states' gradients)."""

import numpy as np
import pytest
from op_harness import check_op

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops.graph import TensorSpec
from flexflow_keras.ops.recurrent import RecurrentOp
from kernels.rnn_reference import rnn_reference

B, T, D, H = 4, 3, 3, 2
rng = np.random.default_rng(0)


def weights(cell):
    g = {"simple_rnn": 1, "lstm": 4, "gru": 3, "gru_reset_before": 3}[cell]
    b = rng.standard_normal((2, g * H) if cell == "gru" else (g * H,)) * 0.3
    return [rng.standard_normal((D, g * H)) * 0.5, rng.standard_normal((H, g * H)) * 0.5, b]


def test_lstm_op_masked_with_state_and_dropout_splits_by_batch():
    x = rng.standard_normal((B, T, D))
    mask = np.array([[1, 1, 1], [0, 1, 1], [1, 0, 0], [1, 1, 0]], np.float64)
    h0, c0 = rng.standard_normal((B, H)), rng.standard_normal((B, H))
    op = RecurrentOp(cell="lstm", units=H, has_mask=True, n_initial=2, return_sequences=True,
                     dropout=0.3, recurrent_dropout=0.4, seed=5)
    check_op(op, [x, mask, h0, c0], weights("lstm"), training=True, shards=2)
    op_eval = RecurrentOp(cell="lstm", units=H, has_mask=True, n_initial=2, return_sequences=True,
                          return_state=True)
    check_op(op_eval, [x, mask, h0, c0], weights("lstm"), shards=2, grad=False,
             ref=lambda x, m, h, c, W, U, b: rnn_reference("lstm", x, W, U, b, m, h, c, return_sequences=True))


def test_gru_reset_before_op_masked_with_state_and_dropout_splits_by_batch():
    x = rng.standard_normal((B, T, D))
    mask = np.array([[1, 1, 1], [0, 1, 1], [1, 0, 0], [1, 1, 0]], np.float64)
    h0 = rng.standard_normal((B, H))
    op = RecurrentOp(cell="gru_reset_before", units=H, has_mask=True, n_initial=1, return_sequences=True,
                     dropout=0.3, recurrent_dropout=0.4, seed=5)
    check_op(op, [x, mask, h0], weights("gru_reset_before"), training=True, shards=2)


@pytest.mark.parametrize("cell", ["gru", "gru_reset_before", "simple_rnn"])
def test_gru_and_simple_rnn_ops_backwards(cell):
    x = rng.standard_normal((B, T, D))
    op = RecurrentOp(cell=cell, units=H, go_backwards=True, return_sequences=True)
    check_op(op, [x], weights(cell), shards=2,
             ref=lambda x, W, U, b: rnn_reference(cell, x, W, U, b, go_backwards=True, return_sequences=True)[0])


def test_parallel_space_and_shape_errors():
    op = RecurrentOp(cell="lstm", units=H, return_sequences=True)
    ins = [TensorSpec((None, T, D))]
    ws = [TensorSpec((D, 4 * H)), TensorSpec((H, 4 * H)), TensorSpec((4 * H,))]
    space = op.parallel_space(ins, ws)
    assert [d.kind for d in space.dims] == ["sample", "attribute", "attribute"]
    assert space.dims[0].splittable and not space.dims[1].splittable and "batch" in space.dims[1].why
    # open timesteps while a functional model is recorded on Input(shape=(None, D)); it runs specialized
    assert tuple(op.output_specs([TensorSpec((None, None, D))], ws)[0].shape) == (None, None, H)
    with pytest.raises(ShapeError, match=r"recurrent_kernel of shape \(2, 8\)"):
        op.output_specs(ins, [ws[0], TensorSpec((3, 8)), ws[2]])
