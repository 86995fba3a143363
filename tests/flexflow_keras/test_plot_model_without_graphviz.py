"""keras.utils.plot_model without pydot or Graphviz, as Keras 3: an ImportError naming what to install, except
in IPython, where the message is logged and plot_model returns None; an unbuilt model is a ValueError."""

import builtins
import logging
import shutil
import sys
import types

import pytest

import flexflow_keras as keras


def _model():
    inp = keras.Input((3,), name="x")
    return keras.Model(inp, keras.layers.Dense(2, name="d")(inp))


@pytest.fixture
def no_pydot(monkeypatch):
    real_import = builtins.__import__

    def refuse(name, *args, **kwargs):
        if name == "pydot":
            raise ImportError("No module named 'pydot'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse)


@pytest.fixture
def in_ipython(monkeypatch):
    monkeypatch.setitem(sys.modules, "IPython.core.magics.namespace", types.ModuleType("namespace"))


def test_without_pydot_raises_import_error_outside_ipython(no_pydot, monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython.core.magics.namespace", raising=False)
    with pytest.raises(ImportError, match="pip install pydot"):
        keras.utils.plot_model(_model())


def test_without_pydot_in_ipython_logs_and_returns_none(no_pydot, in_ipython, caplog, tmp_path):
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        assert keras.utils.plot_model(_model(), to_file=tmp_path / "m.png") is None
    assert "pip install pydot" in caplog.text
    assert not (tmp_path / "m.png").exists()


def test_without_graphviz_in_ipython_logs_and_returns_none(in_ipython, caplog, tmp_path):
    pytest.importorskip("pydot")
    if shutil.which("dot") is not None:
        pytest.skip("Graphviz is installed here")
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        assert keras.utils.plot_model(_model(), to_file=tmp_path / "m.png") is None
    assert "Graphviz" in caplog.text


def test_an_unbuilt_model_is_a_value_error():
    model = keras.Sequential([keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="not been built"):
        keras.utils.plot_model(model)
