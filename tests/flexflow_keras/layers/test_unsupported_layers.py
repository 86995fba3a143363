"""A Keras 3 layer flexflow_keras does not have is a clear error, as an attribute and as a command-line
`from ... import` (which Python would turn into a bare "cannot import name")."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import flexflow_keras as keras
from flexflow_keras.layers import unsupported

ROOT = Path(__file__).resolve().parents[3]


def test_the_list_holds_no_layer_we_have():
    assert not [name for name in unsupported.UNSUPPORTED if name in keras.layers.__all__]


def test_asking_for_one_says_so_and_what_to_do():
    assert not hasattr(keras.layers, "TFSMLayer") and hasattr(keras.layers, "Dense")
    with pytest.raises(unsupported.UnsupportedLayerError, match=r"keras\.layers\.TFSMLayer is a Keras layer "
                                                              r"flexflow_keras does not have: .*another framework"):
        keras.layers.TFSMLayer("saved_model_dir")
    with pytest.raises(AttributeError, match="RandomGrayscale is a Keras layer .*not implemented yet"):
        keras.layers.RandomGrayscale()
    # ZTM's TensorFlow course (notebook 06) augments with RandomHeight / RandomWidth: not a bare AttributeError
    for name in ("RandomHeight", "RandomWidth"):
        with pytest.raises(unsupported.UnsupportedLayerError, match=f"keras.layers.{name} is a Keras layer .*"
                                                                    f"new random size.*RandomZoom"):
            getattr(keras.layers, name)(0.2)
    with pytest.raises(ImportError, match="RandomHeight .*not implemented by flexflow_keras"):
        keras.layers.experimental.preprocessing.RandomHeight(0.2)
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchLayer'"):
        keras.layers.NoSuchLayer  # noqa: B018


@pytest.mark.parametrize("line,said", [
    ("from flexflow_keras.layers import TFSMLayer", "keras.layers.TFSMLayer is a Keras layer flexflow_keras does not have"),
    ("import flexflow_keras as keras\nkeras.layers.TFSMLayer()",
     "keras.layers.TFSMLayer is a Keras layer flexflow_keras does not have"),
    ("from flexflow_keras.optimizers import Muon", "keras.optimizers.Muon is a Keras optimizer flexflow_keras does not have"),
    ("import flexflow_keras as keras\nkeras.optimizers.Muon()",
     "keras.optimizers.Muon is a Keras optimizer flexflow_keras does not have"),
])
def test_on_the_command_line_it_is_one_clean_message(tmp_path, line, said):
    script = tmp_path / "s.py"
    script.write_text(line + "\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1
    assert f"flexflow_keras: error: {said}" in proc.stderr
    assert "Traceback" not in proc.stderr
