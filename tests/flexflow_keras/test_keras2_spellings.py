"""Keras 2 module paths and spellings: keras.layers.<old module>, utils.np_utils, plot_model/model_to_dot."""

import importlib
import shutil
import sys

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.layers import keras2_paths


@pytest.mark.parametrize("module", keras2_paths.KERAS2_MODULES)
def test_every_keras2_layer_module_imports_and_resolves_from_layers(module):
    mod = importlib.import_module(f"flexflow_keras.layers.{module}")
    assert mod.Dense is keras.layers.Dense  # any layer name resolves lazily
    assert not hasattr(mod, "not_a_layer")


def test_keras2_paths_of_the_examples():
    from flexflow_keras.layers.advanced_activations import LeakyReLU
    from flexflow_keras.layers.convolutional import Conv2D
    from flexflow_keras.layers.core import Activation, Dense, Dropout, Flatten
    from flexflow_keras.layers.merge import Concatenate, concatenate
    from flexflow_keras.layers.pooling import MaxPooling2D

    assert (Dense, Conv2D, MaxPooling2D, LeakyReLU) == (keras.layers.Dense, keras.layers.Conv2D,
                                                         keras.layers.MaxPooling2D, keras.layers.LeakyReLU)
    assert concatenate is keras.layers.concatenate and Concatenate is keras.layers.Concatenate
    assert Activation and Dropout and Flatten


def test_a_missing_layer_is_an_import_error_naming_it(monkeypatch):
    with pytest.raises(ImportError, match="NoSuchLayer .*keras.layers.noise.* not implemented by flexflow_keras"):
        from flexflow_keras.layers.noise import NoSuchLayer  # noqa: F401
    # a layer added to flexflow_keras.layers later appears under the old paths without other changes
    sentinel = type("GaussianNoiseForTest", (keras.layers.Layer,), {})
    monkeypatch.setattr(keras.layers, "GaussianNoiseForTest", sentinel, raising=False)
    from flexflow_keras.layers.noise import GaussianNoiseForTest

    assert GaussianNoiseForTest is sentinel


def test_np_utils_and_image_helpers_in_utils():
    from flexflow_keras.utils import np_utils

    np.testing.assert_array_equal(np_utils.to_categorical([0, 2], 3), [[1, 0, 0], [0, 0, 1]])
    assert keras.utils.load_img is keras.preprocessing.image.load_img
    assert keras.utils.img_to_array is keras.preprocessing.image.img_to_array


def _functional():
    inp = keras.Input((4,), name="x")
    a = keras.layers.Dense(3, name="a", activation="relu")(inp)
    b = keras.layers.Dense(2, name="b")(a)
    return keras.Model(inp, keras.layers.concatenate([a, b], name="cat"))


def test_model_to_dot_draws_layers_and_connections():
    pytest.importorskip("pydot")
    dot = keras.utils.model_to_dot(_functional(), show_shapes=True, show_layer_activations=True,
                                   show_trainable=True)
    text = dot.to_string()
    for label in ("x (InputLayer)", "a (Dense)", "b (Dense)", "cat (Concatenate)", "output: (None, 5)",
                  "activation: relu", "trainable: yes"):
        assert label in text
    assert text.count("->") == 4  # x->a, a->b, a->cat, b->cat
    with pytest.raises(ValueError, match="rankdir"):
        keras.utils.model_to_dot(_functional(), rankdir="BT")


def _outside_ipython(monkeypatch):
    # plot_model logs instead of raising where IPython's magics are loaded, as Keras 3 does; importing
    # TensorFlow (another test) loads them
    monkeypatch.delitem(sys.modules, "IPython.core.magics.namespace", raising=False)


def test_plot_model_writes_dot_and_names_graphviz_when_missing(tmp_path, monkeypatch):
    pytest.importorskip("pydot")
    _outside_ipython(monkeypatch)
    keras.utils.plot_model(_functional(), to_file=tmp_path / "m.dot")
    assert (tmp_path / "m.dot").read_text().startswith("digraph")
    if shutil.which("dot") is None:
        with pytest.raises(ImportError, match="Graphviz"):
            keras.utils.plot_model(_functional(), to_file=tmp_path / "m.png")
    else:
        keras.utils.plot_model(_functional(), to_file=tmp_path / "m.png", show_shapes=True)
        assert (tmp_path / "m.png").read_bytes()[:4] == b"\x89PNG"


def test_plot_model_without_pydot_names_what_to_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pydot(name, *args, **kwargs):
        if name == "pydot":
            raise ImportError("No module named 'pydot'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pydot)
    _outside_ipython(monkeypatch)
    with pytest.raises(ImportError, match=r"pip install pydot"):
        keras.utils.plot_model(_functional())


def test_predict_classes_and_proba_of_sequential():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile("sgd", "binary_crossentropy")
    x = np.random.default_rng(0).random((5, 3)).astype(np.float32)
    proba = model.predict_proba(x)
    np.testing.assert_array_equal(model.predict_classes(x), (proba > 0.5).astype("int32"))
    linear = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    linear.compile("sgd", "mse")
    linear.set_weights([np.full((3, 2), 5.0, np.float32), np.zeros(2, np.float32)])
    with pytest.warns(UserWarning, match="invalid probability"):
        linear.predict_proba(x)


def test_keras2_lowercase_optimizers_and_constraints():
    """Keras 2.x scripts: ``optimizers.adamax(lr=...)``, ``from keras.optimizers import sgd``, ``maxnorm``."""
    from flexflow_keras.constraints import maxnorm, nonneg, unitnorm
    from flexflow_keras.optimizers import sgd

    opt = keras.optimizers.adamax(lr=0.01)
    assert type(opt) is keras.optimizers.Adamax and np.isclose(float(opt.learning_rate), 0.01)
    assert sgd is keras.optimizers.SGD
    for name in ("adam", "rmsprop", "adagrad", "adadelta", "nadam"):
        assert isinstance(getattr(keras.optimizers, name)(), keras.optimizers.Optimizer)
    assert isinstance(maxnorm(2), keras.constraints.MaxNorm)
    assert (nonneg, unitnorm) == (keras.constraints.NonNeg, keras.constraints.UnitNorm)
    dense = keras.layers.Dense(3, kernel_constraint="maxnorm")
    assert isinstance(dense.kernel_constraint, keras.constraints.MaxNorm)
    assert importlib.import_module("flexflow_keras.optimizers.adam").Adam is keras.optimizers.Adam


def test_experimental_preprocessing_path_of_tf_2_3_to_2_5():
    """``from tensorflow.keras.layers.experimental.preprocessing import StringLookup`` (keras.io's movielens
    transformer); attribute access reaches the same layers, and a missing one names the path."""
    from flexflow_keras.layers.experimental import preprocessing
    from flexflow_keras.layers.experimental.preprocessing import Normalization, StringLookup

    assert StringLookup is keras.layers.StringLookup and Normalization is keras.layers.Normalization
    assert keras.layers.experimental.preprocessing.TextVectorization is keras.layers.TextVectorization
    assert preprocessing is keras.layers.experimental.preprocessing
    assert keras.layers.experimental.RandomFourierFeatures.__name__ == "RandomFourierFeatures"
    with pytest.raises(ImportError, match=r"keras.layers.experimental.preprocessing\) is not implemented"):
        from flexflow_keras.layers.experimental.preprocessing import NoSuchLayer  # noqa: F401
