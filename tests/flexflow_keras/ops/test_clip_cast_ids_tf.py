"""keras.io's GRN/VSN example: ``keras.ops.clip`` on integer ids before an Embedding (the CPU kernel clipped
in float64 into an int64 output) and ``tf.cast(strings, "string")`` in a dataset map (TensorFlow returns
them as they are, and refuses numbers), against TensorFlow 2.21."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.errors import ArgumentError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
IDS = np.array([-3, 0, 2, 39, 50], dtype=np.int64)


def test_clip_of_int_ids_matches_tf_eager_and_in_a_model():
    want = tf.keras.ops.clip(tf.constant(IDS), 0, 39).numpy()
    got = np.asarray(keras.ops.clip(IDS, 0, 39))
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    x = keras.Input(shape=(), dtype="int64")
    emb = keras.layers.Embedding(40, 3)
    model = keras.Model(x, emb(keras.ops.clip(x, 0, 39)))
    table = emb.get_weights()[0]
    np.testing.assert_array_equal(model.predict(IDS, verbose=0), table[want])


def test_cast_to_string_is_identity_on_strings_and_refuses_numbers():
    words = np.array([b" Private", b" ?"], dtype=object)
    assert tf.cast(tf.constant(words), "string").numpy().tolist() == words.tolist()
    assert np.asarray(FFTF.cast(words, "string")).tolist() == words.tolist()
    s = keras.Input(shape=(), dtype="string")
    assert keras.ops.cast(s, "string") is s
    with pytest.raises(Exception):  # noqa: B017 - TensorFlow's own error type
        tf.cast(tf.constant([1, 2]), tf.string)
    with pytest.raises(ArgumentError, match=r"tf.strings.as_string"):
        FFTF.cast(np.array([1, 2]), FFTF.string)
