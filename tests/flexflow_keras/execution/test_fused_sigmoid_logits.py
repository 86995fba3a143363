"""A binary crossentropy on a layer's fused sigmoid reads the logits from a copy of the layer's op (named
`<op>/logits`): the output op keeps its name, so strategy files written before still fit, and saturated
outputs keep their gradient."""

import json
import re

import numpy as np

import flexflow_keras as keras


def _model():
    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu", name="h"),
                          keras.layers.Dense(1, activation="sigmoid", name="click")])
    m.compile(keras.optimizers.SGD(1e-3), "binary_crossentropy")
    return m


def test_saturated_sigmoid_output_learns_and_old_strategy_files_fit(tmp_path, caplog):
    rng = np.random.default_rng(0)
    x = (rng.random((128, 8)) * 255).astype(np.float32)  # raw pixel-like values: the sigmoid saturates
    y = (x @ rng.standard_normal(8) > 0).astype(np.float32)[:, None]
    path = tmp_path / "old.json"  # as exported before the copy existed: it names the ops the model has
    path.write_text(json.dumps({"format": "flexflow_keras.strategy/1", "ops": {
        "h": {"degrees": [2, 1], "devices": [0, 1]}, "click": {"degrees": [2, 1], "devices": [0, 1]},
        "loss": {"degrees": [2], "devices": [0, 1]}}}))
    m = _model()
    w = np.random.default_rng(1)
    m.set_weights([(w.standard_normal(v.shape) * 1.0).astype(np.float32) for v in m.get_weights()])
    keras.config.set(import_strategy=str(path))
    try:
        with caplog.at_level("INFO", logger="flexflow_keras"):
            losses = m.fit(x, y, epochs=4, batch_size=32, shuffle=False, verbose=0).history["loss"]
    finally:
        keras.config.reset()
    # clipped probabilities cap a value at -log(1e-7) = 16.1 and give saturated outputs no gradient
    assert losses[0] > 16.2 and all(b < a for a, b in zip(losses[:-1], losses[1:], strict=True))
    assert re.search(r"\n  click +\[2, 1\] on \[0, 1\]", caplog.text)  # the file's config for the output op
    assert re.search(r"\n  click/logits +\[", caplog.text)  # and the copy, named after it
