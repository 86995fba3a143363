"""Metrics created without a name are numbered as Keras 3's auto_name numbers them (auc, auc_1, ...; a
string such as "AUC" consumes a number too), so two AUC metrics of one model log apart and the history
keys of a script are tf.keras's. They were all "auc", and the second overwrote the first in the logs."""

import numpy as np
import pytest

import flexflow_keras


def _keys(lib):
    lib.backend.clear_session()
    names = [lib.metrics.AUC().name, lib.metrics.AUC(curve="PR").name, lib.metrics.MeanIoU(num_classes=2).name,
             lib.metrics.Precision().name, lib.metrics.Recall(thresholds=0.3).name,
             lib.metrics.TruePositives().name]
    rng = np.random.default_rng(0)
    x, y = rng.random((32, 4)).astype("float32"), rng.integers(0, 2, 32).astype("float32")
    keys = []
    for _ in range(2):
        m = lib.Sequential([lib.Input((4,)), lib.layers.Dense(1, activation="sigmoid")])
        m.compile("adam", "binary_crossentropy",
                  metrics=[lib.metrics.AUC(), lib.metrics.AUC(curve="PR"), "AUC", lib.metrics.Precision(), "accuracy"])
        keys.append(sorted(m.fit(x, y, epochs=1, verbose=0, validation_split=0.25).history))
        keys.append(sorted(m.evaluate(x, y, verbose=0, return_dict=True)))
    return names, keys


def test_unnamed_metrics_are_numbered_and_log_apart():
    names, keys = _keys(flexflow_keras)
    assert names[:2] == ["auc", "auc_1"]
    assert {"auc_2", "auc_3", "AUC"} <= set(keys[0])


def test_names_and_history_keys_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    assert _keys(flexflow_keras) == _keys(keras)
