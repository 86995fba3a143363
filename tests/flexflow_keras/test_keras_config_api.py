"""keras.config's traceback-filtering switches and numeric settings (Keras 3 names)."""

import pytest

import flexflow_keras as keras
from flexflow_keras.utils import cli_errors


@pytest.fixture
def clean_debug_env(monkeypatch):
    monkeypatch.delenv("FF_DEBUG", raising=False)
    monkeypatch.setattr("sys.argv", ["script.py"])


def test_traceback_filtering_toggles_the_debug_report(clean_debug_env, monkeypatch):
    assert keras.config.is_traceback_filtering_enabled()
    assert not cli_errors._debug()
    keras.config.disable_traceback_filtering()
    assert not keras.config.is_traceback_filtering_enabled()
    assert cli_errors._debug()  # whole tracebacks, as with --debug
    keras.config.enable_traceback_filtering()
    assert keras.config.is_traceback_filtering_enabled()
    assert not cli_errors._debug()


def test_debug_flag_wins_over_enable(clean_debug_env, monkeypatch):
    monkeypatch.setattr("sys.argv", ["script.py", "--debug"])
    keras.config.enable_traceback_filtering()
    assert not keras.config.is_traceback_filtering_enabled()


def test_numeric_settings_are_the_backend_ones():
    assert keras.config.floatx() == keras.backend.floatx() == "float32"
    old = keras.config.epsilon()
    try:
        keras.config.set_epsilon(1e-5)
        assert keras.backend.epsilon() == 1e-5
    finally:
        keras.config.set_epsilon(old)
    assert keras.config.image_data_format() == "channels_last"


def test_mixed_precision_policy_is_float32_or_a_clear_error():
    """keras.mixed_precision.set_global_policy('mixed_float16') in a script: one clean error, never a
    float32 run the script believes is mixed; 'float32' is accepted."""
    import pytest

    import flexflow_keras as keras
    from flexflow_keras.errors import ConfigError

    keras.mixed_precision.set_global_policy("float32")
    assert keras.mixed_precision.global_policy().compute_dtype == "float32"
    for name in ("mixed_float16", "mixed_bfloat16"):
        with pytest.raises(ConfigError, match=f"policy '{name}': flexflow_keras computes .* float32 only"):
            keras.mixed_precision.set_global_policy(name)
        with pytest.raises(ConfigError, match=f"policy '{name}'"):
            keras.config.set_dtype_policy(name)  # Keras 3's spelling
    assert keras.config.dtype_policy().name == "float32"
    with pytest.raises(ConfigError, match="LossScaleOptimizer"):
        keras.mixed_precision.LossScaleOptimizer(keras.optimizers.Adam())
    assert not isinstance(keras.optimizers.Adam(), keras.mixed_precision.LossScaleOptimizer)
