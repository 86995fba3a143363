"""backend settings and helpers; utils: to_categorical, normalize, pad_sequences, set_random_seed, get_file."""

import random

import numpy as np
import pytest

from flexflow_keras import backend, utils


def test_settings_round_trip():
    assert backend.image_data_format() == "channels_last"
    backend.set_image_data_format("channels_first")
    assert backend.image_data_format() == "channels_first"
    backend.set_image_data_format("channels_last")
    with pytest.raises(ValueError, match="channels_last"):
        backend.set_image_data_format("nhwc")
    eps = backend.epsilon()
    backend.set_epsilon(1e-5)
    assert backend.epsilon() == 1e-5
    backend.set_epsilon(eps)
    assert backend.floatx() == "float32"
    with pytest.raises(ValueError):
        backend.set_floatx("int8")
    assert backend.backend() == "flexflow"


def test_int_shape_and_values():
    from flexflow_keras import layers

    assert backend.int_shape(np.zeros((2, 3))) == (2, 3)
    assert backend.int_shape(layers.Input((5,))) == (None, 5)
    assert backend.is_keras_tensor(layers.Input((5,))) and not backend.is_keras_tensor(np.zeros(1))
    assert backend.cast_to_floatx([1, 2]).dtype == np.float32

    class Var:
        v = np.float32(0.1)

        def numpy(self):
            return self.v

        def assign(self, x):
            self.v = x

    var = Var()
    backend.set_value(var, 0.5)
    assert backend.get_value(var) == 0.5
    with pytest.raises(TypeError, match="assign"):
        backend.set_value(0.1, 0.2)


def test_to_categorical_and_normalize():
    y = utils.to_categorical([2, 0, 1])
    np.testing.assert_array_equal(y, np.eye(3)[[2, 0, 1]])
    assert utils.to_categorical(np.array([[1], [3]]), num_classes=5).shape == (2, 5)
    with pytest.raises(ValueError, match="outside"):
        utils.to_categorical([0, 7], num_classes=3)
    n = utils.normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(n, [[0.6, 0.8], [0.0, 0.0]])


def test_pad_sequences_matches_keras_semantics():
    seqs = [[1, 2, 3], [4], []]
    np.testing.assert_array_equal(utils.pad_sequences(seqs), [[1, 2, 3], [0, 0, 4], [0, 0, 0]])
    np.testing.assert_array_equal(utils.pad_sequences(seqs, maxlen=2, padding="post", truncating="post"),
                                  [[1, 2], [4, 0], [0, 0]])
    np.testing.assert_array_equal(utils.pad_sequences(seqs, maxlen=2), [[2, 3], [0, 4], [0, 0]])
    with pytest.raises(ValueError, match="padding='pre' or 'post'"):
        utils.pad_sequences(seqs, padding="middle")


def test_set_random_seed_seeds_python_and_numpy():
    utils.set_random_seed(7)
    a, b = random.random(), np.random.rand()
    utils.set_random_seed(7)
    assert (a, b) == (random.random(), np.random.rand())
    with pytest.raises(ValueError, match="non-negative integer"):
        utils.set_random_seed(1.5)


def test_get_file_never_downloads(tmp_path):
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "mnist.npz").write_bytes(b"x")
    assert utils.get_file("mnist.npz", cache_dir=str(tmp_path)).endswith("mnist.npz")
    with pytest.raises(FileNotFoundError, match="does not download"):
        utils.get_file(origin="https://example.com/other.npz", cache_dir=str(tmp_path))


def test_custom_objects():
    @utils.register_keras_serializable(package="t")
    class Thing:
        def __init__(self, v=1):
            self.v = v

    assert utils.get_custom_objects()["t>Thing"] is Thing
    with utils.custom_object_scope({"Other": Thing}):
        obj = utils.deserialize_keras_object({"class_name": "Other", "config": {"v": 3}})
    assert obj.v == 3


def test_progbar_is_exported():
    from flexflow_keras.utils import Progbar

    assert Progbar(10).target == 10


def test_backend_name_is_tensorflow_under_the_runner(monkeypatch):
    """A backend-agnostic script picks its tf.* branch by it (keras.io's GRN/VSN example)."""
    from flexflow_keras import config, keras_alias

    assert backend.backend() == config.backend() == "flexflow"
    monkeypatch.setattr(keras_alias, "installed", lambda: True)
    assert backend.backend() == config.backend() == "tensorflow"
