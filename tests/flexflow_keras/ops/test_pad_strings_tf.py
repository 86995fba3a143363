"""ops.pad / tf.pad of text (numpy_extra._pad_strings): keras.io's multi_label_trainer_tfidf pads each
abstract in a tf.data map with ``tf.pad([text], [[0, n]], constant_values="<pad>")`` and joins the result;
we converted the fill to a float and stopped ("could not convert string to float: '<pad>'")."""

import numpy as np
import pytest

from flexflow_keras import ops, tf_compat
from flexflow_keras.data.slices import SliceDataset

TEXTS = ["a b c", "d e f g h i"]


def _unify(pad, reduce_join, split, shape):
    def unify(text):
        n = 4 - shape(split(text, sep=" "))[0]
        if n > 0:
            return reduce_join(pad([text], [[0, n]], constant_values="<pad>"), separator="")
        return text
    return unify


def _ours():
    call = tf_compat.mapped_call
    ds = SliceDataset.from_tensor_slices(np.array(TEXTS))
    unify = _unify(call("tf.pad"), call("tf.strings.reduce_join"), call("tf.strings.split"), call("tf.shape"))
    return [x.numpy() for x in ds.map(unify)]


def test_pad_strings_without_tf():
    out = ops.pad(np.array([b"x", b"y"], dtype=object), [[1, 2]], constant_values="<p>")
    assert out.dtype == "string"
    assert out.numpy().tolist() == [b"<p>", b"x", b"y", b"<p>", b"<p>"]
    assert ops.pad(np.array(["x"]), [[0, 1]]).numpy().tolist() == [b"x", b""]  # TensorFlow's default: ""
    assert _ours() == [b"a b c<pad>", b"d e f g h i"]


def test_pad_strings_as_tf():
    tf = pytest.importorskip("tensorflow")
    ds = tf.data.Dataset.from_tensor_slices(np.array(TEXTS))
    theirs = [x.numpy() for x in ds.map(_unify(tf.pad, tf.strings.reduce_join, tf.strings.split, tf.shape))]
    assert _ours() == theirs
    assert ops.pad(np.array([[b"x"]], dtype=object), [[0, 1], [1, 0]], constant_values="-").numpy().tolist() == \
        tf.pad(tf.constant([["x"]]), [[0, 1], [1, 0]], constant_values="-").numpy().tolist()
