"""A subclassed Model without get_config, built with plain constructor arguments (Géron's handson-ml3
chapter 10 WideAndDeepModel(30, activation="relu", name=...)), saves to .keras and reloads with
custom_objects, as tf.keras 3.15 does through its automatic config. Before: model.save() refused it
("a subclassed model without get_config()")."""

import numpy as np
import pytest

import flexflow_keras as ff


def _model_class(lib):
    class WideAndDeep(lib.Model):
        def __init__(self, units=30, activation="relu", **kwargs):
            super().__init__(**kwargs)
            self.hidden = lib.layers.Dense(units, activation=activation)
            self.main_output = lib.layers.Dense(1)
            self.aux_output = lib.layers.Dense(1)

        def call(self, inputs):
            wide, deep = inputs
            hidden = self.hidden(deep)
            return self.main_output(lib.layers.concatenate([wide, hidden])), self.aux_output(hidden)

    return WideAndDeep


def _run(lib, path):
    cls = _model_class(lib)
    rng = np.random.default_rng(0)
    wide, deep = rng.normal(size=(8, 2)).astype("float32"), rng.normal(size=(8, 3)).astype("float32")
    model = cls(30, activation="relu", name="my_cool_model")
    model.predict((wide, deep), verbose=0)  # built by a predict, as the notebook builds it by fit
    model.set_weights([np.linspace(-0.3, 0.3, w.size).reshape(w.shape).astype("float32") for w in model.get_weights()])
    config = {k: v for k, v in model.get_config().items() if k != "dtype"}
    model.save(path)
    loaded = lib.models.load_model(path, custom_objects={"WideAndDeep": cls})
    return config, loaded.name, [np.asarray(p) for p in loaded.predict((wide, deep), verbose=0)], \
        [np.asarray(p) for p in model.predict((wide, deep), verbose=0)]


def test_a_subclassed_model_with_plain_arguments_saves_and_loads_as_tf_keras(tmp_path):
    tf = pytest.importorskip("tensorflow")
    ours, theirs = _run(ff, tmp_path / "ff.keras"), _run(tf.keras, tmp_path / "tf.keras")
    assert ours[0] == theirs[0] == {"name": "my_cool_model", "units": 30, "activation": "relu", "trainable": True}
    assert ours[1] == theirs[1] == "my_cool_model"
    for got, want, before in zip(ours[2], theirs[2], ours[3], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got, before)



def _eager_built(lib, path):
    import json
    import zipfile

    class Regressor(lib.Model):
        def __init__(self, units=8, **kwargs):
            super().__init__(**kwargs)
            self.hidden = lib.layers.Dense(units, activation="relu")
            self.out = lib.layers.Dense(1)

        def call(self, inputs):
            return self.out(self.hidden(inputs))

    x = np.random.default_rng(1).normal(size=(4, 3)).astype("float32")
    model = Regressor()
    before = np.asarray(model(x))  # built by one eager call only
    model.save(path)
    build_config = json.loads(zipfile.ZipFile(path).read("config.json"))["build_config"]
    loaded = lib.models.load_model(path, custom_objects={"Regressor": Regressor})
    return build_config, before, np.asarray(loaded(x))


def test_a_subclassed_model_built_by_an_eager_call_saves_its_input_shape(tmp_path):
    """Keras 3 saves the first call's shape as build_config; ours saved none, and load_model refused the
    file ("saved before it was built")."""
    tf = pytest.importorskip("tensorflow")
    ours, theirs = _eager_built(ff, tmp_path / "ff.keras"), _eager_built(tf.keras, tmp_path / "tf.keras")
    assert ours[0] == theirs[0] == {"input_shape": [4, 3]}
    np.testing.assert_array_equal(ours[2], ours[1])
    np.testing.assert_array_equal(theirs[2], theirs[1])
