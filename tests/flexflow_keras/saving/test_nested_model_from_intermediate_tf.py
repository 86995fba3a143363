"""A functional model built from an intermediate tensor (``Model(mid, out)`` with ``mid = Dense(4)(a)``)
nested in another saves and loads: Keras 3 clones such an input into an InputLayer ("...CLONE") and its
config lists it. Here the nested model's config pointed at the producing layer's node, which is not in it,
and save stopped on "<Node of pre: 1 in, 1 out> is not in list" (keras.io's feature-preprocessing recipe
saves its inference model so). The file loads here and in Keras 3.15 with the same predictions."""

import numpy as np
import pytest

import flexflow_keras as ff

keras = pytest.importorskip("keras")


def _model(lib):
    a = lib.Input((3,), name="a")
    mid = lib.layers.Dense(4, name="pre", kernel_initializer="ones")(a)
    x = lib.layers.Dense(2, name="d1", kernel_initializer="ones", bias_initializer="ones")(mid)
    out = lib.layers.Dense(1, name="d2", kernel_initializer="ones")(lib.layers.ReLU()(x))
    training_model = lib.Model(mid, out, name="train")
    return lib.Model(a, training_model(mid))


def test_saved_nested_model_loads_here_and_in_keras(tmp_path):
    data = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    model = _model(ff)
    want = _model(keras).predict(data, verbose=0)
    np.testing.assert_allclose(model.predict(data, verbose=0), want, rtol=1e-6)
    path = str(tmp_path / "nested.keras")
    model.save(path)
    back = ff.models.load_model(path)
    np.testing.assert_allclose(back.predict(data, verbose=0), want, rtol=1e-6)
    theirs = keras.models.load_model(path)
    np.testing.assert_allclose(theirs.predict(data, verbose=0), want, rtol=1e-6)
    inner = theirs.get_layer("train")
    assert type(inner.layers[0]).__name__ == "InputLayer" and inner.layers[0].name.endswith("CLONE")
