"""A query whose every key is masked (a padding position's row) in MultiHeadAttention and
GroupedQueryAttention, as Keras 3: with no dropout and no returned scores Keras runs
ops.dot_product_attention and that row attends uniformly; otherwise (dropout, return_attention_scores) its
weights are zero. keras.io's neural_machine_translation_with_transformer's encoder (padding mask from the
token embedding) gave other values at the padding positions than tf.keras."""

import numpy as np
import pytest

import flexflow_keras as ffk

Q = np.random.RandomState(0).rand(2, 3, 4).astype("float32")
MASK = np.ones((2, 3, 3), "int32")
MASK[:, 2, :] = 0  # query row 2 attends to nothing
MASK[1, 0, 1] = 0


def _mha(keras, dropout=0.0):
    return keras.layers.MultiHeadAttention(num_heads=2, key_dim=4, dropout=dropout, bias_initializer="ones")


def _gqa(keras, dropout=0.0):
    return keras.layers.GroupQueryAttention(head_dim=4, num_query_heads=2, num_key_value_heads=1,
                                              dropout=dropout, bias_initializer="ones")


def _model(keras, make, dropout=0.0, scores=False):
    q, m = keras.Input((3, 4)), keras.Input((3, 3), dtype="int32")
    layer = make(keras, dropout)
    out = layer(q, q, attention_mask=m, return_attention_scores=scores)
    return keras.Model([q, m], out[0] if scores else out)


def _value_rows_mean(model):
    """The output a uniformly attending row gets: output_dense(mean over keys of the value projection)."""
    w = {v.path.split("/")[-2] + "/" + v.path.split("/")[-1]: np.asarray(v) for v in model.weights}
    value = np.einsum("bsd,dnh->bsnh", Q, w["value/kernel"]) + w["value/bias"]
    ctx = value.mean(axis=1)  # (B, N, H)
    return np.einsum("bnh,nhd->bd", ctx, w["attention_output/kernel"]) + w["attention_output/bias"]


def test_fully_masked_row_attends_uniformly_without_dropout():
    model = _model(ffk, _mha)
    got = model.predict([Q, MASK], verbose=0)
    np.testing.assert_allclose(got[:, 2], _value_rows_mean(model), rtol=1e-5, atol=1e-6)


def test_fully_masked_row_gets_zero_weights_with_scores_or_dropout():
    for dropout, scores in ((0.0, True), (0.1, False)):
        model = _model(ffk, _mha, dropout, scores)
        bias = np.asarray(model.layers[-1]._output_dense.bias)
        np.testing.assert_allclose(model.predict([Q, MASK], verbose=0)[:, 2], np.broadcast_to(bias, (2, 4)),
                                   rtol=1e-6)


@pytest.mark.parametrize("make", [_mha, _gqa])
@pytest.mark.parametrize("dropout,scores", [(0.0, False), (0.0, True), (0.2, False)])
def test_masked_rows_match_tf(make, dropout, scores):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    theirs, ours = _model(keras, make, dropout, scores), _model(ffk, make, dropout, scores)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours.predict([Q, MASK], verbose=0), theirs.predict([Q, MASK], verbose=0),
                               rtol=1e-5, atol=1e-6)
