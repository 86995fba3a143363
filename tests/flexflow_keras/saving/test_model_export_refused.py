"""``model.export(path)`` (Keras 3: a TensorFlow SavedModel, ONNX or OpenVINO artifact for serving, as keras.io's
ShiftViT ends) is a SavingError that says flexflow_keras cannot write it and how to get one, not a bare
AttributeError; nothing is written."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.saving.errors import SavingError


@pytest.mark.parametrize("fmt", ["tf_saved_model", "onnx"])
def test_export_is_a_clear_saving_error(tmp_path, fmt):
    inp = keras.Input((3,))
    model = keras.Model(inp, keras.layers.Dense(2)(inp), name="net")
    model.predict(np.zeros((1, 3), "float32"), verbose=0)
    path = tmp_path / "exported"
    with pytest.raises(SavingError) as info:
        model.export(str(path), format=fmt)
    msg = str(info.value)
    assert "net" in msg and fmt in msg and ".keras" in msg and "load_model" in msg
    assert not path.exists()
