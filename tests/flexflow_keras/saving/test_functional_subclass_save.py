"""A Model subclass built as ``Model(inputs, outputs)`` without get_config (keras.io's masked language
model) saves its functional config under its own class name and loads back as that class, as Keras 3's
`functional_like_constructor` rule does; a constructor of another shape still needs get_config."""

import numpy as np
import pytest

import flexflow_keras as keras


class MaskedLM(keras.Model):  # no __init__: built as MaskedLM(inputs, outputs)
    pass


class ArgsKwargsModel(keras.Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class OtherModel(keras.Model):
    def __init__(self, inputs, outputs, **kwargs):
        super().__init__(inputs, outputs, **kwargs)


def _graph(k):
    i = k.Input((3,), name="x")
    return i, k.layers.Dense(2, name="d")(k.layers.Dense(4, activation="relu", name="h")(i))


@pytest.mark.parametrize("cls", [MaskedLM, ArgsKwargsModel])
def test_saved_and_loaded_as_its_class(cls, tmp_path):
    model = cls(*_graph(keras))
    config = keras.saving.serialize_keras_object(model)
    assert config["class_name"] == cls.__name__ and config["registered_name"] == cls.__name__
    assert set(config["config"]) == {"name", "trainable", "layers", "input_layers", "output_layers"}
    assert model.get_config() == config["config"]
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(0).random((8, 3), dtype=np.float32)
    model.fit(x, x[:, :2], verbose=0)
    path = str(tmp_path / "m.keras")
    model.save(path)
    back = keras.models.load_model(path, custom_objects={cls.__name__: cls})
    assert isinstance(back, cls)
    np.testing.assert_allclose(back.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    with pytest.raises(Exception, match=cls.__name__):  # the class is needed to load it, as in Keras
        keras.models.load_model(path)


def test_other_constructors_still_need_get_config(tmp_path):
    with pytest.raises(NotImplementedError, match="without get_config"):
        OtherModel(*_graph(keras)).save(str(tmp_path / "o.keras"))


def test_files_cross_with_keras3(tmp_path):
    pytest.importorskip("tensorflow")
    k = pytest.importorskip("keras")
    if not k.__version__.startswith("3."):
        pytest.skip(f"the installed keras is {k.__version__}, not Keras 3")

    class Theirs(k.Model):
        pass

    x = np.random.default_rng(1).random((4, 3), dtype=np.float32)
    theirs = Theirs(*_graph(k))
    ours_cfg = keras.saving.serialize_keras_object(MaskedLM(*_graph(keras)))
    theirs_cfg = k.saving.serialize_keras_object(theirs)
    assert ours_cfg["module"] == MaskedLM.__module__ and ours_cfg["registered_name"] == "MaskedLM"
    assert set(theirs_cfg["config"]) == set(ours_cfg["config"])
    path = str(tmp_path / "theirs.keras")
    theirs.save(path)
    ours = keras.models.load_model(path, custom_objects={"Theirs": MaskedLM})
    assert isinstance(ours, MaskedLM)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    mine = MaskedLM(*_graph(keras))
    path2 = str(tmp_path / "ours.keras")
    mine.save(path2)
    back = k.models.load_model(path2, custom_objects={"MaskedLM": Theirs})
    assert isinstance(back, Theirs)
    np.testing.assert_allclose(back.predict(x, verbose=0), mine.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
