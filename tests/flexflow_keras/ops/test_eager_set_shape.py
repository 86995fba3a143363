"""`set_shape` on eager tensors and tf.data elements, as TensorFlow's: a static-shape hint that checks
(TensorFlow's time-series tutorial sets ``inputs.set_shape([None, self.input_width, None])`` on the
windows its split_window slices, eagerly and in a Dataset.map)."""

import numpy as np
import pytest

from flexflow_keras.data.dataset import as_tensor
from flexflow_keras.keras_alias import _TensorFlow

tf = _TensorFlow("tensorflow")


@pytest.mark.parametrize("shape", [[None, 6, None], (3, 6, 19), [None, None, None], None])
def test_a_compatible_shape_is_accepted_as_tensorflow_accepts_it(shape):
    window = tf.stack([np.zeros((7, 19), "float32")] * 3)[:, :6, :]
    assert window.set_shape(shape) is None and window.shape == (3, 6, 19)


@pytest.mark.parametrize("shape", [[None, 5, None], [3, 6], [3, 6, 19, 1]])
def test_another_shape_is_tensorflows_value_error(shape):
    tf_ref = pytest.importorskip("tensorflow")
    ours = tf.stack([np.zeros((7, 19), "float32")] * 3)[:, :6, :]
    with pytest.raises(ValueError, match="not compatible") as theirs:
        tf_ref.zeros((3, 6, 19)).set_shape(shape)
    with pytest.raises(ValueError, match=r"Tensor's shape \(3, 6, 19\) is not compatible with supplied shape"):
        ours.set_shape(shape)
    assert "not compatible" in str(theirs.value)


def test_set_shape_in_a_dataset_map_and_on_text():
    windows = np.arange(2 * 7 * 3, dtype="float32").reshape(2, 7, 3)

    def split(w):
        inputs, labels = w[:, :6, :], w[:, 6:, :1]
        inputs.set_shape([None, 6, None])
        labels.set_shape([None, 1, None])
        return inputs, labels
    x, y = next(iter(tf.data.Dataset.from_tensor_slices(windows).batch(2).map(split)))
    assert x.shape == (2, 6, 3) and y.shape == (2, 1, 1)
    text = as_tensor(np.array(["a", "b"]))
    text.set_shape([2])
    with pytest.raises(ValueError, match="not compatible"):
        text.set_shape([3])
