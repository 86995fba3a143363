"""VarianceScaling and its presets (Glorot, He, LeCun) as tf.keras 3.15 defines them: `input_axes` and
`output_axes` (the axes whose sizes multiply to the fans) are constructor arguments and config keys, and
``distribution="normal"`` is another name for "truncated_normal". Ours refused the axes, left them out of
get_config (Hands-On ML ch11 prints VarianceScaling(scale=2., mode="fan_avg", distribution="uniform")'s
config), and drew an untruncated normal for "normal"."""

import math

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


@pytest.mark.parametrize("name,kw", [
    ("VarianceScaling", {"scale": 2.0, "mode": "fan_avg", "distribution": "uniform"}),
    ("VarianceScaling", {"distribution": "normal", "seed": 3}),
    ("VarianceScaling", {"mode": "fan_out", "input_axes": [0], "output_axes": [1, 2]}),
    ("HeNormal", {"seed": 1}), ("GlorotUniform", {"input_axes": [0, 1], "output_axes": [2]}),
    ("LecunNormal", {}), ("HeUniform", {}), ("LecunUniform", {}), ("GlorotNormal", {})])
def test_config_equals_tf_keras(name, kw):
    ours, theirs = getattr(ff.initializers, name)(**kw), getattr(keras_ref.initializers, name)(**kw)
    assert ours.get_config() == theirs.get_config()
    again = getattr(ff.initializers, name).from_config(ours.get_config())
    assert again.get_config() == ours.get_config()


def test_fan_axes_set_the_scale_as_tf_keras():
    shape = (4, 5, 6)  # fan_in 4, fan_out 30 from the axes (Keras' own rule: 20 and 30)
    limit = math.sqrt(3.0 * 2.0 / 4)
    for lib in (ff, keras_ref):
        init = lib.initializers.VarianceScaling(2.0, "fan_in", "uniform", seed=0, input_axes=[0],
                                                output_axes=[1, 2])
        v = np.asarray(init(shape))
        assert v.shape == shape and np.abs(v).max() <= limit and np.abs(v).max() > 0.9 * limit


def test_normal_is_the_truncated_normal_as_tf_keras():
    for lib in (ff, keras_ref):
        v = np.asarray(lib.initializers.VarianceScaling(distribution="normal", seed=0)((400, 400)))
        stddev = math.sqrt(1.0 / 400)
        assert np.abs(v).max() <= 2 * stddev / 0.87962566103423978 + 1e-6
        assert v.std() == pytest.approx(stddev, rel=0.02)
