"""Shape ops between a model input and a host layer (layers/host_shape_step.py): keras.io's
``StringLookup(...)(keras.ops.expand_dims(string_input, -1))`` and the same on an integer input run as host
steps before the graph, in fit, predict and on a dataset; an op that is not a shape op still names itself."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.data.slices import SliceDataset
from flexflow_keras.errors import GraphError

VOCAB = ["a", "b", "c"]


def _model():
    s = keras.Input(shape=(), dtype="string", name="s")
    n = keras.Input(shape=(), dtype="int64", name="n")
    f = keras.Input(shape=(), dtype="float32", name="f")
    one_hot = keras.layers.StringLookup(vocabulary=VOCAB, num_oov_indices=0, output_mode="binary")(
        keras.ops.expand_dims(s, -1))
    ids = keras.layers.IntegerLookup(vocabulary=[10, 20], mask_token=None)(keras.ops.reshape(n, (-1, 1)))
    emb = keras.layers.Flatten()(keras.layers.Embedding(3, 2)(ids))
    x = keras.layers.concatenate([one_hot, emb, keras.ops.expand_dims(f, -1)])
    return keras.Model({"s": s, "n": n, "f": f}, keras.layers.Dense(1)(x))


def test_lookup_on_an_expanded_input_trains_and_predicts():
    model = _model()
    assert [t.dtype for t in model._host_prefix.graph_inputs].count("string") == 0
    data = {"s": np.array(["a", "c", "b", "a"] * 4, dtype=object), "n": np.array([10, 20, 30, 10] * 4),
            "f": np.arange(16, dtype="float32")}
    model.compile("adam", "mse")
    model.fit(data, np.zeros(16), batch_size=8, epochs=1, verbose=0)
    assert model.predict(data, verbose=0).shape == (16, 1)
    ds = SliceDataset.from_tensor_slices((data, np.zeros(16))).batch(8)
    assert model.evaluate(ds, verbose=0) >= 0


def test_host_steps_match_numpy():
    s = keras.Input(shape=(2,), dtype="string")
    t = keras.ops.transpose(keras.ops.expand_dims(s, -1), (0, 2, 1))
    out = keras.layers.StringLookup(vocabulary=VOCAB, num_oov_indices=0)(keras.ops.squeeze(t, 1))
    model = keras.Model(s, keras.ops.cast(out, "float32") * 1.0)
    got = model.predict(np.array([["a", "b"], ["c", "a"]], dtype=object), verbose=0)
    np.testing.assert_array_equal(got, [[0.0, 1.0], [2.0, 0.0]])


def test_a_computed_tensor_is_still_refused():
    n = keras.Input(shape=(1,), dtype="float32")
    with pytest.raises(GraphError, match=r"IntegerLookup .* cannot take the output of .*only reshape, expand_dims"):
        keras.layers.IntegerLookup(vocabulary=[1, 2])(n * 2.0)


def test_string_inputs_the_outputs_do_not_read_are_left_unread():
    """keras.io's movielens transformer declares user features it may leave out of the model."""
    s = keras.Input(shape=(1,), dtype="string", name="unused")
    ids = keras.Input(shape=(1,), dtype="string", name="ids")
    n = keras.Input(shape=(2,), name="n")
    looked = keras.layers.StringLookup(vocabulary=VOCAB, num_oov_indices=0)(ids)
    x = keras.layers.concatenate([keras.ops.cast(looked, "float32"), n])
    model = keras.Model({"unused": s, "ids": ids, "n": n}, keras.layers.Dense(1)(x))
    data = {"unused": np.array([["zz"], ["yy"]], dtype=object), "ids": np.array([["a"], ["c"]], dtype=object),
            "n": np.ones((2, 2), "float32")}
    assert model.predict(data, verbose=0).shape == (2, 1)
    with pytest.raises(GraphError, match="holds strings"):  # a model none of whose inputs is used
        keras.Model(s, keras.layers.Dense(1)(keras.Input((3,))))
