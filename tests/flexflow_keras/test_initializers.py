"""Initializers: Keras 3 formulas (fans, limits, truncation), seeding, get/serialize."""

import math

import numpy as np
import pytest

from flexflow_keras import initializers, utils


@pytest.mark.parametrize("name,std", [
    ("glorot_uniform", math.sqrt(2 / (400 + 300))), ("glorot_normal", math.sqrt(2 / (400 + 300))),
    ("he_normal", math.sqrt(2 / 400)), ("he_uniform", math.sqrt(2 / 400)),
    ("lecun_normal", math.sqrt(1 / 400)), ("lecun_uniform", math.sqrt(1 / 400)),
    ("random_normal", 0.05), ("truncated_normal", 0.05 * 0.8796), ("uniform", 0.1 / math.sqrt(12)),
])
def test_statistics(name, std):
    v = initializers.get(name)((400, 300))
    assert v.dtype == np.float32 and v.shape == (400, 300)
    assert abs(float(v.std()) - std) < 0.03 * std
    assert abs(float(v.mean())) < 0.05 * std


def test_limits_and_truncation():
    v = initializers.GlorotUniform(seed=1)((20, 30))
    assert np.abs(v).max() <= math.sqrt(6 / 50)
    t = initializers.TruncatedNormal(stddev=1.0, seed=2)((10000,))
    assert np.abs(t).max() <= 2.0
    k = initializers.HeNormal(seed=3)((3, 3, 8, 16))  # conv kernel: fan_in = 3 * 3 * 8
    assert abs(float(k.std()) - math.sqrt(2 / 72)) < 0.1 * math.sqrt(2 / 72)
    assert initializers.compute_fans((3, 3, 8, 16)) == (72, 144)


def test_constant_ones_zeros_identity_orthogonal():
    np.testing.assert_array_equal(initializers.get("zeros")((2, 2)), 0)
    np.testing.assert_array_equal(initializers.get("ones")((3,)), 1)
    np.testing.assert_array_equal(initializers.Constant(2.5)((2,)), 2.5)
    np.testing.assert_array_equal(initializers.Identity(gain=2)((2, 2)), 2 * np.eye(2))
    q = initializers.Orthogonal(seed=0)((5, 3))
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-5)
    q = initializers.Orthogonal(seed=0)((3, 5))
    np.testing.assert_allclose(q @ q.T, np.eye(3), atol=1e-5)


def test_seeding():
    a = initializers.RandomNormal(seed=5)
    np.testing.assert_array_equal(a((4,)), a((4,)))  # seeded: the same values every call (Keras 3)
    np.testing.assert_array_equal(a((4,)), initializers.RandomNormal(seed=5)((4,)))
    utils.set_random_seed(11)
    first = initializers.get("glorot_uniform")((3, 3))
    utils.set_random_seed(11)
    np.testing.assert_array_equal(first, initializers.get("glorot_uniform")((3, 3)))
    assert not np.array_equal(initializers.get("glorot_uniform")((3, 3)), initializers.get("glorot_uniform")((3, 3)))


def test_get_serialize_and_errors():
    init = initializers.get({"class_name": "VarianceScaling", "config": {"scale": 2.0, "mode": "fan_out"}})
    assert isinstance(init, initializers.VarianceScaling) and init.scale == 2.0
    cfg = initializers.serialize(initializers.HeUniform(seed=4))
    assert cfg == {"module": "keras.initializers", "class_name": "HeUniform",
                   "config": {"seed": 4, "input_axes": None, "output_axes": None}, "registered_name": None}
    np.testing.assert_array_equal(initializers.deserialize(cfg)((2, 2)), initializers.HeUniform(seed=4)((2, 2)))
    assert isinstance(initializers.get("GlorotUniform"), initializers.GlorotUniform)
    assert isinstance(initializers.get(initializers.Zeros), initializers.Zeros)
    fn = initializers.get(lambda shape, dtype=None: np.full(shape, 7.0))
    assert fn((1,))[0] == 7.0
    with pytest.raises(ValueError, match=r"Unknown initializer 'glorot'\. Valid names: \["):
        initializers.get("glorot")
    with pytest.raises(ValueError, match="mode"):
        initializers.VarianceScaling(mode="fan")
    with pytest.raises(ValueError, match="Identity initializer needs a 2-D shape"):
        initializers.Identity()((2, 2, 2))
