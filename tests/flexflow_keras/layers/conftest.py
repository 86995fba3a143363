import pytest

from flexflow_keras import backend


@pytest.fixture(autouse=True)
def _fresh_names():
    """Every test starts with fresh layer-name counters and the default data format."""
    backend.clear_session()
    yield
    backend.set_image_data_format("channels_last")


@pytest.fixture(params=[pytest.param(False, id="ff"), pytest.param(True, id="vs_tf", marks=pytest.mark.tf)])
def parity(request):
    """False: our checks only; True (marked tf): also compare with tf.keras (skipped without TensorFlow)."""
    if request.param:
        pytest.importorskip("tensorflow")
    return request.param
