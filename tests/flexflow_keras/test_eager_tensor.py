"""Eager results have tf.keras' ``.numpy()``: the lines of TensorFlow's beginner quickstart
(``model(x).numpy()``, ``tf.nn.softmax(logits).numpy()``, ``loss_fn(y, logits).numpy()``) and loss tests
written against tf.keras."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.keras_alias import _TensorFlow
from flexflow_keras.ops.eager_tensor import EagerTensor


def test_eager_results_have_numpy():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((3, 10)).astype(np.float32)
    y = np.array([1, 2, 3])
    tf = _TensorFlow("tensorflow")
    probs = tf.nn.softmax(logits).numpy()
    assert type(probs) is np.ndarray and np.allclose(probs.sum(axis=1), 1.0, atol=1e-6)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, logits)
    assert isinstance(loss, EagerTensor) and loss.shape == () and isinstance(float(loss), float)
    want = -np.log(probs[np.arange(3), y]).mean()
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-5)
    assert f"{loss:.3f}" == f"{want:.3f}"
    mean = keras.ops.mean(keras.ops.exp(logits))
    assert type(mean.numpy()) is np.float32 and np.isclose(mean.numpy(), np.exp(logits).mean(), rtol=1e-5)  # as TF
    cce = keras.losses.CategoricalCrossentropy()(np.eye(3, dtype="f"), np.full((3, 3), 1 / 3, "f"))
    np.testing.assert_allclose(cce.numpy(), np.log(3), rtol=1e-5)
    model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(2)])
    assert model(logits).numpy().shape == (3, 2)


def test_the_items_of_a_batch_are_tensors_with_numpy():
    """keras.io's ViViT: ``for x, y in zip(images, labels): y.numpy()`` on a batch from a dataset."""
    labels = keras.ops.convert_to_tensor(np.array([1.0, 0.0, 2.0], "float32"))
    images = keras.ops.convert_to_tensor(np.ones((3, 2), "float32"))
    assert isinstance(labels, EagerTensor)
    for x, y in zip(images, labels, strict=True):
        assert isinstance(x, EagerTensor) and x.numpy().shape == (2,)
        assert isinstance(y, np.float32) and type(y.numpy()) is np.float32
    assert type(labels[2].numpy()) is np.float32 and labels[2].numpy() == 2.0
    assert [int(v) for v in labels] == [1, 0, 2]
    assert set(np.unique(labels)) == {0.0, 1.0, 2.0} and {labels[0]: "one"}[1.0] == "one"
    # an item stays the NumPy scalar it is: shapes, range, integer checks and pickling as before
    ids = keras.ops.convert_to_tensor(np.array([3, 4], "int64"))
    assert isinstance(ids[0], np.integer) and list(range(ids[0])) == [0, 1, 2] and ids[1].numpy() == 4
    import pickle

    assert type(pickle.loads(pickle.dumps(ids[0]))) is np.int64
    with pytest.raises(TypeError, match="unhashable"):
        hash(images)
