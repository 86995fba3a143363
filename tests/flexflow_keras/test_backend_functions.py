"""Keras 2's keras.backend tensor functions: eager against NumPy, symbolic in a Keras 2 custom layer
(antirectifier) that trains, and variables."""

from __future__ import annotations

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import backend as K
from flexflow_keras import layers

rng = np.random.default_rng(1)
A = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal((3, 4)).astype(np.float32)
P = rng.random((3, 4)).astype(np.float32) * 0.9 + 0.05

CASES = [
    (lambda: K.mean(A, axis=1, keepdims=True), lambda: A.mean(1, keepdims=True)),
    (lambda: K.sum(A), lambda: A.sum()),
    (lambda: K.max(A, axis=0), lambda: A.max(0)),
    (lambda: K.min(A, axis=1), lambda: A.min(1)),
    (lambda: K.sqrt(K.abs(A)), lambda: np.sqrt(np.abs(A))),
    (lambda: K.square(A), lambda: A ** 2),
    (lambda: K.exp(A), lambda: np.exp(A)),
    (lambda: K.log(P), lambda: np.log(P)),
    (lambda: K.pow(P, 3), lambda: P ** 3),
    (lambda: K.maximum(A, B), lambda: np.maximum(A, B)),
    (lambda: K.minimum(A, 0.0), lambda: np.minimum(A, 0.0)),
    (lambda: K.clip(A, -0.2, None), lambda: np.maximum(A, -0.2)),
    (lambda: K.concatenate([A, B]), lambda: np.concatenate([A, B], -1)),
    (lambda: K.stack([A, B], axis=1), lambda: np.stack([A, B], 1)),
    (lambda: K.l2_normalize(A, axis=1), lambda: A / np.linalg.norm(A, axis=1, keepdims=True)),
    (lambda: K.cast(K.equal(A > 0, B > 0), "float32"), lambda: ((A > 0) == (B > 0)).astype(np.float32)),
    (lambda: K.relu(A), lambda: np.maximum(A, 0)),
    (lambda: K.relu(A, alpha=0.1, max_value=0.5), lambda: np.minimum(np.where(A > 0, A, 0.1 * A), 0.5)),
    (lambda: K.softmax(A), lambda: np.exp(A) / np.exp(A).sum(1, keepdims=True)),
    (lambda: K.sigmoid(A), lambda: 1 / (1 + np.exp(-A))),
    (lambda: K.tanh(A), lambda: np.tanh(A)),
    (lambda: K.argmax(A, axis=-1), lambda: A.argmax(-1)),
    (lambda: K.dot(A, B.T), lambda: A @ B.T),
    (lambda: K.dot(A, np.ones((2, 4, 5), np.float32)), lambda: np.dot(A, np.ones((2, 4, 5)))),
    (lambda: K.batch_dot(A, B, axes=1), lambda: (A * B).sum(1, keepdims=True)),
    (lambda: K.batch_dot(A[:, None], np.ones((3, 4, 2), np.float32)), lambda: A[:, None] @ np.ones((3, 4, 2))),
    (lambda: K.flatten(A), lambda: A.reshape(-1)),
    (lambda: K.reshape(A, (6, 2)), lambda: A.reshape(6, 2)),
    (lambda: K.binary_crossentropy(np.round(P), P),
     lambda: -(np.round(P) * np.log(P) + (1 - np.round(P)) * np.log(1 - P))),
    (lambda: K.categorical_crossentropy(np.eye(4)[[0, 1, 3]], P[:, :] / P.sum(1, keepdims=True)),
     lambda: -np.log((P / P.sum(1, keepdims=True))[[0, 1, 2], [0, 1, 3]])),
    (lambda: K.ones_like(A), lambda: np.ones_like(A)),
    (lambda: K.zeros_like(A), lambda: np.zeros_like(A)),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_backend_functions_match_numpy(case):
    got, want = CASES[case]
    np.testing.assert_allclose(np.asarray(got(), np.float64), np.asarray(want(), np.float64), rtol=1e-5, atol=1e-6)


def test_variables_constants_and_settings():
    v = K.variable(np.ones((2, 2)))
    assert v.dtype == "float32" and K.get_value(v).tolist() == [[1, 1], [1, 1]]
    K.set_value(v, np.zeros((2, 2)))
    assert K.eval(v).sum() == 0 and K.count_params(v) == 4
    assert K.constant(2.0, shape=(2,)).tolist() == [2.0, 2.0] and K.epsilon() == 1e-7
    assert K.int_shape(keras.Input((3, 5))) == (None, 3, 5) and K.ndim(A) == 2
    assert K.learning_phase() == 0
    with pytest.raises(AttributeError):
        K.no_such_function  # noqa: B018


class Antirectifier(layers.Layer):
    """Keras 2.3.1's examples/antirectifier.py layer, as written there."""

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        shape[-1] *= 2
        return tuple(shape)

    def call(self, inputs):
        inputs -= K.mean(inputs, axis=1, keepdims=True)
        inputs = K.l2_normalize(inputs, axis=1)
        pos = K.relu(inputs)
        neg = K.relu(-inputs)
        return K.concatenate([pos, neg], axis=1)


def test_keras2_antirectifier_layer_trains():
    model = keras.Sequential([keras.Input((6,)), layers.Dense(8), Antirectifier(), layers.Dense(3, activation="softmax")])
    assert model.output_shape == (None, 3)
    model.compile("rmsprop", "sparse_categorical_crossentropy", metrics=["accuracy"])
    x = rng.standard_normal((32, 6)).astype(np.float32)
    y = rng.integers(0, 3, 32)
    hist = model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    assert np.isfinite(hist.history["loss"][0])
    out = Antirectifier()(x[:, :4])
    centred = x[:, :4] - x[:, :4].mean(1, keepdims=True)
    unit = centred / np.linalg.norm(centred, axis=1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), np.concatenate([np.maximum(unit, 0), np.maximum(-unit, 0)], 1),
                               rtol=1e-5, atol=1e-6)
