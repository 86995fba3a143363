"""CTC (keras.backend.ctc_batch_cost / ctc_decode, keras.ops.ctc_loss / ctc_decode, keras.losses.CTC, raw
tf.nn.ctc_loss) is not implemented: each says so, and what to do, as an AttributeError (hasattr is False)."""

import pytest

import flexflow_keras as keras
from flexflow_keras.errors import FlexFlowKerasError


@pytest.mark.parametrize("module, name", [(keras.backend, "ctc_batch_cost"), (keras.backend, "ctc_decode"),
                                          (keras.ops, "ctc_loss"), (keras.ops, "ctc_decode")])
def test_ctc_functions_say_they_are_missing(module, name):
    with pytest.raises(FlexFlowKerasError, match="connectionist temporal classification"):
        getattr(module, name)
    assert not hasattr(module, name)


def test_ctc_loss_names_say_they_are_missing():
    with pytest.raises(AttributeError, match="TensorFlow itself"):
        keras.losses.CTC  # noqa: B018
    with pytest.raises(FlexFlowKerasError, match="not implemented"):
        keras.losses.get("ctc")
