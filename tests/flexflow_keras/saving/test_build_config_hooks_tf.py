"""A layer or subclassed model that defines ``get_build_config`` / ``build_from_config`` has them used as
Keras 3.15 uses them: save writes what get_build_config returns, load_model and deserialize call
build_from_config with it before the weights are placed. Before, load built the layer from its input shape
and never called build_from_config; a subclassed model built by an eager call could not be loaded."""

import os

import numpy as np
import pytest

import flexflow_keras as ff


def _classes(lib, calls, package):
    @lib.saving.register_keras_serializable(package=package)
    class Lazy(lib.layers.Layer):
        def __init__(self, units=3, **kw):
            super().__init__(**kw)
            self.units = units

        def build(self, input_shape):
            calls.append(("build", tuple(input_shape)))
            self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="ones", name="w")

        def call(self, x):
            return lib.ops.matmul(x, self.w)

        def get_config(self):
            return {**super().get_config(), "units": self.units}

        def get_build_config(self):
            calls.append("get_build_config")
            return {"shape": [None, 5], "extra": 1}

        def build_from_config(self, config):
            calls.append(("build_from_config", config))
            self.build(tuple(config["shape"]))

    @lib.saving.register_keras_serializable(package=package)
    class Sub(lib.Model):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.d = lib.layers.Dense(2)

        def call(self, x):
            return self.d(x)

        def get_config(self):
            return {"name": self.name}

        def get_build_config(self):
            calls.append("model get_build_config")
            return {"input_shape": [None, 5], "tag": "x"}

        def build_from_config(self, config):
            calls.append(("model build_from_config", config))
            self.build(tuple(config["input_shape"]))

    return Lazy, Sub


def _run(lib, tmp, package):
    calls = []
    lazy, sub = _classes(lib, calls, package)
    model = lib.Sequential([lib.Input((5,)), lazy()])
    model.set_weights([np.arange(15, dtype="float32").reshape(5, 3)])
    model.save(os.path.join(tmp, "seq.keras"))
    calls.clear()
    loaded = lib.models.load_model(os.path.join(tmp, "seq.keras"))
    out = [list(calls), loaded.get_weights()[0]]
    layer = lazy()
    layer.build((None, 5))
    calls.clear()
    config = lib.layers.serialize(layer)
    out += [config["build_config"], lib.layers.deserialize(config).built, list(calls)]
    m = sub()
    m(np.ones((1, 5), "float32"))
    calls.clear()
    m.save(os.path.join(tmp, "sub.keras"))
    lib.models.load_model(os.path.join(tmp, "sub.keras"))
    out.append(list(calls))
    return out


def test_build_config_hooks_as_keras(tmp_path):
    pytest.importorskip("tensorflow")
    import keras

    (tmp_path / "ff").mkdir()
    (tmp_path / "k").mkdir()
    got, want = _run(ff, str(tmp_path / "ff"), "bc_ff"), _run(keras, str(tmp_path / "k"), "bc_k")
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2:] == want[2:]


def test_subclassed_model_restores_weights_through_build_from_config(tmp_path):
    _, sub = _classes(ff, [], "bc_ff2")
    m = sub()
    x = np.linspace(-1, 1, 10).reshape(2, 5).astype("float32")
    want = np.asarray(m(x))
    m.save(str(tmp_path / "m.keras"))
    np.testing.assert_allclose(np.asarray(ff.models.load_model(str(tmp_path / "m.keras"))(x)), want, rtol=1e-6)
