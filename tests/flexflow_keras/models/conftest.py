import pytest

from flexflow_keras import backend


@pytest.fixture(autouse=True)
def _fresh_names():
    """Every test starts with fresh layer-name counters and the default data format."""
    backend.clear_session()
    yield
    backend.set_image_data_format("channels_last")
