"""RNN(cell) with the built-in cells (single, stacked, backwards, masked), one cell step, configs, and
parity with tf.keras on copied weights."""

import numpy as np
import pytest
from ff_layer_harness import make_data, run_layer_test

from flexflow_keras import layers, models
from kernels.rnn_reference import rnn_reference

CELLS = [("simple_rnn", layers.SimpleRNNCell, "SimpleRNNCell"), ("lstm", layers.LSTMCell, "LSTMCell"),
         ("gru", layers.GRUCell, "GRUCell")]


@pytest.mark.parametrize("kind,cls,tf_name", CELLS, ids=[c[0] for c in CELLS])
def test_rnn_of_a_cell(kind, cls, tf_name, parity):
    kw = dict(cell=cls(3), return_sequences=True)
    tf_kwargs = None
    if parity:
        from ff_layer_harness import tf_keras

        tf_kwargs = dict(cell=getattr(tf_keras().layers, tf_name)(3), return_sequences=True)
    layer, out, (x,) = run_layer_test(layers.RNN, kw, input_shape=(2, 4, 3), expected_output_shape=(None, 4, 3),
                                      expected_num_weights=3, compare_tf=parity, tf_layer="RNN", tf_kwargs=tf_kwargs)
    want, _, _ = rnn_reference(kind, x, *layer.get_weights(), return_sequences=True)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_one_cell_step_and_state_size():
    cell = layers.LSTMCell(2)
    x = make_data((3, 4))
    h0, c0 = make_data((3, 2), seed=1), make_data((3, 2), seed=2)
    y, (h, c) = cell(x, [h0, c0])
    want_y, want_h, want_c = rnn_reference("lstm", x[:, None], *cell.get_weights(), h0=h0, c0=c0)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, want_c, rtol=1e-5, atol=1e-6)
    assert cell.state_size == [2, 2] and layers.GRUCell(3).state_size == 3
    clone = layers.LSTMCell.from_config(cell.get_config())
    assert clone.get_config() == cell.get_config()


def test_stacked_cells_backwards_and_masked_equal_stacked_layers():
    x = make_data((3, 5, 4))
    mask = np.ones((3, 5), bool)
    mask[0, :2] = False
    mask[2, 3:] = False
    inp, m = layers.Input((5, 4)), layers.Input((5,), dtype="bool")
    rnn = layers.RNN([layers.GRUCell(3), layers.SimpleRNNCell(2)], go_backwards=True, return_state=True)
    y, h1, h2 = rnn(inp, mask=m)
    got = models.Model([inp, m], [y, h1, h2])([x, mask])
    g_w, s_w = rnn.cell.cells[0].get_weights(), rnn.cell.cells[1].get_weights()
    # The stack processes the reversed sequence: the first cell's sequence, in processing order, feeds the
    # second (both masked by the reversed mask).
    seq, h_first, _ = rnn_reference("gru", x, *g_w, mask=mask, go_backwards=True, return_sequences=True)
    want_y, want_h2, _ = rnn_reference("simple_rnn", seq, *s_w, mask=mask[:, ::-1])
    np.testing.assert_allclose(got[0], want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], h_first, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], want_h2, rtol=1e-5, atol=1e-6)
    clone = layers.RNN.from_config(rnn.get_config())
    assert clone.get_config() == rnn.get_config()


def test_rnn_refuses_custom_cells_and_sequence_args_on_cells():
    class MyCell(layers.Layer):
        state_size = 2

    with pytest.raises(ValueError, match="custom cells"):
        layers.RNN(MyCell())
    with pytest.raises(ValueError, match="give them to the RNN layer"):
        layers.LSTMCell(2, return_sequences=True)
