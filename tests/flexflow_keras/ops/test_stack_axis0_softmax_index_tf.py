"""``ops.stack(xs, axis=0)`` of batch-first symbolic tensors used as TensorFlow allows (ops/batch_second.py),
against tf.keras 3.15: keras.io's attention_mil_classification stacks one score per instance, takes
``ops.softmax(s, axis=0)`` across them and returns ``[alpha[i] for i in range(alpha.shape[0])]``; that
stopped with 'stacked on axis 0 put the new axis before the batch dim'. Softmax / log_softmax and the
reductions along any axis, indexing and slicing the stacked axis, len and iteration now give TensorFlow's
values; arithmetic on the stack stays an error that says how to write it."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras.errors import ShapeError  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(0)
X = [rng.normal(size=(10, 5)).astype("float32") for _ in range(3)]
Y = rng.integers(0, 2, (10, 1))


def _mil(lib):
    ops = lib.ops

    class Attention(lib.layers.Layer):
        def build(self, input_shape):
            self.v = self.add_weight(shape=(input_shape[0][1], 4), initializer="glorot_uniform", name="v")
            self.w = self.add_weight(shape=(4, 1), initializer="glorot_uniform", name="w")

        def call(self, inputs):
            scores = ops.stack([ops.tensordot(ops.tanh(ops.tensordot(x, self.v, axes=1)), self.w, axes=1)
                                for x in inputs])
            alpha = ops.softmax(scores, axis=0)
            return [alpha[i] for i in range(alpha.shape[0])]

    inputs = [lib.Input((5,)) for _ in range(3)]
    embeddings = [lib.layers.Dense(6, activation="relu")(x) for x in inputs]
    alpha = Attention(name="alpha")(embeddings)
    mixed = lib.layers.concatenate([lib.layers.multiply([a, e]) for a, e in zip(alpha, embeddings, strict=True)])
    return lib.Model(inputs, lib.layers.Dense(2, activation="softmax")(mixed))


def test_attention_mil_pattern_predicts_and_trains_as_tf_keras():
    ours, theirs = _mil(ff), _mil(keras_ref)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours.predict(X, verbose=0), theirs.predict(X, verbose=0), rtol=1e-5, atol=1e-6)
    att_ours = ff.Model(ours.inputs, ours.get_layer("alpha").output).predict(X, verbose=0)
    att_theirs = keras_ref.Model(theirs.inputs, theirs.get_layer("alpha").output).predict(X, verbose=0)
    np.testing.assert_allclose(att_ours, att_theirs, rtol=1e-5, atol=1e-6)
    for m, lib in ((ours, ff), (theirs, keras_ref)):
        m.compile(lib.optimizers.SGD(0.1), "sparse_categorical_crossentropy")
    h1 = ours.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def _uses(lib):
    """Outputs computed from a (3, batch, 2, 4) stack of symbolic tensors, each batch first."""
    ops = lib.ops
    inputs = [lib.Input((2, 4)) for _ in range(3)]
    s = ops.stack(inputs)
    outs = [ops.sum(s, axis=0), ops.mean(s, axis=(0, 2)), ops.max(s, axis=0), ops.min(s, axis=-1)[1],
            ops.prod(s, axis=0), ops.logsumexp(s, axis=0), ops.log_softmax(s, axis=-1)[2],
            ops.sum(s, axis=-1, keepdims=True)[0], ops.max(s, axis=0, keepdims=True)[0],
            ops.moveaxis(ops.softmax(s, axis=0)[1:, :], 0, 1), ops.softmax(s, axis=1 - 3)[-1][:, 1],
            ops.mean(ops.stack(inputs[:2], axis=0)[::-1, ...][0], axis=-1)]
    return lib.Model(inputs, outs)


def test_softmax_reductions_and_indexing_equal_tf_keras():
    xs = [rng.normal(size=(5, 2, 4)).astype("float32") for _ in range(3)]
    ours, theirs = _uses(ff).predict(xs, verbose=0), _uses(keras_ref).predict(xs, verbose=0)
    assert len(ours) == len(theirs) == 12
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_len_iteration_and_errors():
    a, b = ff.Input((3,)), ff.Input((3,))
    s = ff.ops.stack([a, b])
    assert len(s) == 2 and list(s) == [a, b] and s[-1] is b
    assert ff.ops.softmax(s, axis=0).shape == (2, None, 3)
    assert ff.ops.sum(s, axis=0).shape == (None, 3)
    with pytest.raises(IndexError, match="out of bounds for axis 0 of a stack of 2"):
        s[2]
    with pytest.raises(ShapeError, match="before the batch dim.*indexed on axis 0"):
        s + 1
    with pytest.raises(ShapeError, match="before the batch dim"):
        ff.Model([a, b], ff.ops.softmax(s, axis=0))
