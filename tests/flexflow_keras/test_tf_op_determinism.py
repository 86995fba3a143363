"""tf.config.experimental.enable_op_determinism under the runner (tf_setup.py): keras.io's reproducibility
recipe calls it on its second line, and it stopped with 'raw TensorFlow is not supported'. CPU kernels here
repeat their numbers, so it holds there; with GPUs it warns about the atomic-add CUDA kernels."""

import logging

import numpy as np

import flexflow_keras as keras
from flexflow_keras import tf_compat, tf_setup


def _train(seed):
    keras.utils.set_random_seed(seed)
    x = np.random.RandomState(0).rand(64, 6).astype("float32")
    y = (x.sum(axis=1) > 3).astype("int32")
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dropout(0.3),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, epochs=2, batch_size=16, verbose=0).history
    return history, model.get_weights()


def test_enable_op_determinism_maps_and_training_repeats():
    enable = tf_compat.mapped_call("tf.config.experimental.enable_op_determinism")
    enabled = tf_compat.mapped_call("tf.config.experimental.is_op_determinism_enabled")
    enable()
    assert enabled()
    (h1, w1), (h2, w2) = _train(812), _train(812)
    assert h1 == h2
    for a, b in zip(w1, w2, strict=True):
        np.testing.assert_array_equal(a, b)
    tf_compat.mapped_call("tf.config.experimental.disable_op_determinism")()
    assert not enabled()


def test_enable_op_determinism_warns_with_gpus(monkeypatch, caplog):
    monkeypatch.setattr(tf_setup, "devices", lambda kind=None: ["gpu0"] if kind == "GPU" else [])
    with caplog.at_level(logging.WARNING):
        tf_setup.enable_op_determinism()
    assert "atomic adds" in caplog.text and "-ll:gpu 0" in caplog.text
    tf_setup.disable_op_determinism()
