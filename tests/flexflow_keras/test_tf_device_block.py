"""``with tf.device(...)`` under the runner (tf_setup.device): the block runs as it is (placement is the
strategy's and the -ll flags'), as keras.io's multi-label example adapts its TextVectorization inside
``with tf.device("/CPU:0")``; a non-string name is refused as TensorFlow refuses it."""

import numpy as np
import pytest

import flexflow_keras as ff
from flexflow_keras import keras_alias
from flexflow_keras.errors import ConfigError

FFTF = keras_alias._TensorFlow("tensorflow")


@pytest.mark.parametrize("name", ["/CPU:0", "/GPU:0", "/device:GPU:1", "cpu:0", None])
def test_device_block_runs_its_body(name):
    layer = ff.layers.TextVectorization(max_tokens=10, output_mode="int", output_sequence_length=3)
    with FFTF.device(name):
        layer.adapt(np.array(["a b c", "a b", "a"]))
        x = ff.ops.add(np.ones(2, np.float32), 1.0)
    assert [str(t) for t in layer.get_vocabulary()] == ["", "[UNK]", "a", "b", "c"]
    np.testing.assert_array_equal(np.asarray(x), [2.0, 2.0])


def test_device_name_must_be_a_string():
    with pytest.raises(ConfigError, match="device name string"):
        with FFTF.device(0):
            pass
