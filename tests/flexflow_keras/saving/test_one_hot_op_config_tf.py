"""keras.ops.one_hot applied to a functional model's symbolic ids saves in a .keras config as Keras 3
writes it (``keras.src.ops.nn`` `OneHot`: num_classes, axis, dtype, sparse) and loads back, in both
directions with tf.keras 3.15 (Deep Learning with Python, 2nd ed., ch. 11's one-hot bidirectional LSTM:
ModelCheckpoint saves it every epoch). Before, model.save refused it ("a .keras config cannot describe")."""

import json
import zipfile

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras.errors import DataError  # noqa: E402

pytestmark = pytest.mark.tf

IDS = np.array([[1, 2, 6, 0], [0, 3, 3, 5]], np.int64)


def _model(K, axis=-1):
    inp = K.Input((None,), dtype="int64")
    x = K.ops.one_hot(inp, 7, axis=axis)
    if axis == 1:
        x = K.layers.Permute((2, 1))(x)
    x = K.layers.GlobalAveragePooling1D()(x)
    return K.Model(inp, K.layers.Dense(2)(x))


def _entry(path):
    config = json.loads(zipfile.ZipFile(path).read("config.json"))
    return next(e for e in config["config"]["layers"] if e["class_name"] == "OneHot")


@pytest.mark.parametrize("axis", [-1, 1])
def test_one_hot_op_saves_as_keras_and_loads_both_ways(tmp_path, axis):
    theirs, ours = _model(tk, axis), _model(ff, axis)
    ours.set_weights(theirs.get_weights())
    theirs.save(tmp_path / "tf.keras")
    ours.save(tmp_path / "ff.keras")
    a, b = _entry(tmp_path / "tf.keras"), _entry(tmp_path / "ff.keras")
    assert (b["module"], b["class_name"]) == (a["module"], a["class_name"]) == ("keras.src.ops.nn", "OneHot")
    assert {k: b["config"][k] for k in ("num_classes", "axis", "dtype", "sparse")} == \
        {k: a["config"][k] for k in ("num_classes", "axis", "dtype", "sparse")}
    want = theirs.predict(IDS, verbose=0)
    np.testing.assert_allclose(ff.models.load_model(tmp_path / "tf.keras").predict(IDS, verbose=0), want,
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ff.models.load_model(tmp_path / "ff.keras").predict(IDS, verbose=0), want,
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tk.models.load_model(tmp_path / "ff.keras").predict(IDS, verbose=0), want,
                               rtol=1e-6, atol=1e-7)


def test_a_sparse_one_hot_entry_is_refused_clearly(tmp_path):
    theirs = _model(tk)
    theirs.save(tmp_path / "tf.keras")
    with zipfile.ZipFile(tmp_path / "tf.keras") as z:
        files = {n: z.read(n) for n in z.namelist()}
    config = json.loads(files["config.json"])
    next(e for e in config["config"]["layers"] if e["class_name"] == "OneHot")["config"]["sparse"] = True
    files["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(tmp_path / "sparse.keras", "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
    with pytest.raises(DataError, match="sparse=True.*no sparse tensors"):
        ff.models.load_model(tmp_path / "sparse.keras")
