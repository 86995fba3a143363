"""The hardware-detection cell of the DeepLearning.AI Advanced Techniques object-localization lab (C3_W1_Lab_3)
answers under `python -m flexflow_keras` as TensorFlow 2.21 does on a machine without a TPU:
`tf.distribute.cluster_resolver.TPUClusterResolver()` is a ValueError (the lab catches it), then
`tf.config.experimental.list_logical_devices("GPU")` lists the GPUs, and its `dataset_to_numpy_util` asks
`tf.executing_eagerly()` (True, and False inside a tf.function). Before, all three were refused as raw
TensorFlow (an AttributeError, so the lab's `except ValueError` did not catch the first)."""

import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _detect(t):
    try:
        tpu = t.distribute.cluster_resolver.TPUClusterResolver()
    except ValueError:
        tpu = None
    gpus = t.config.experimental.list_logical_devices("GPU")
    cpus = t.config.list_logical_devices("CPU")
    strategy = t.distribute.get_strategy()
    return {"tpu": tpu, "gpus": [(d.name, d.device_type) for d in gpus],
            "cpus": [(d.name, d.device_type) for d in cpus], "replicas": strategy.num_replicas_in_sync,
            "eager": t.executing_eagerly(), "compat_eager": t.compat.v1.executing_eagerly(),
            "in_function": bool(t.function(lambda: t.executing_eagerly())())}


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")), reason="compares CPU-only answers")
def test_hardware_detection_answers_as_tensorflow():
    assert _detect(FFTF) == _detect(tf)


def test_tpu_resolver_error_is_a_value_error_saying_what_to_do():
    with pytest.raises(ValueError, match="no TPU.*get_strategy"):
        FFTF.distribute.cluster_resolver.TPUClusterResolver("grpc://10.0.0.2:8470")
