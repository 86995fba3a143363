"""Regularizers (penalty and gradient) and constraints, against closed forms and finite differences."""

import numpy as np
import pytest

from flexflow_keras import constraints, regularizers

w = np.array([[1.0, -2.0], [0.5, 0.0], [-3.0, 4.0]], dtype=np.float32)


@pytest.mark.parametrize("reg,penalty", [
    (regularizers.L1(0.1), 0.1 * 10.5), (regularizers.L2(0.01), 0.01 * 30.25),
    (regularizers.L1L2(l1=0.1, l2=0.01), 0.1 * 10.5 + 0.01 * 30.25),
])
def test_penalty_and_gradient(reg, penalty):
    assert reg.penalty(w) == pytest.approx(penalty)
    assert reg(w) == pytest.approx(penalty)
    g = reg.gradient(w)
    assert g.shape == w.shape and g.dtype == w.dtype
    eps = 1e-4
    w64 = w.astype(np.float64)
    for idx in [(0, 0), (0, 1), (2, 1)]:  # away from the kink of |w| at 0
        d = np.zeros_like(w64)
        d[idx] = eps
        numeric = (reg.penalty(w64 + d) - reg.penalty(w64 - d)) / (2 * eps)
        assert g[idx] == pytest.approx(numeric, rel=1e-3)


def test_regularizer_get_and_config():
    assert isinstance(regularizers.get("l2"), regularizers.L2) and regularizers.get("l2").l2 == 0.01
    r = regularizers.get({"class_name": "L1L2", "config": {"l1": 0.2, "l2": 0.3}})
    assert (r.l1, r.l2) == (0.2, 0.3)
    assert regularizers.serialize(regularizers.l2(1e-4)) == {"module": "keras.regularizers", "class_name": "L2",
                                                             "config": {"l2": 1e-4}, "registered_name": None}
    with pytest.raises(ValueError, match="Unknown regularizer 'l3'"):
        regularizers.get("l3")
    with pytest.raises(ValueError, match="non-negative finite l2"):
        regularizers.L2(-1)


def test_constraints():
    m = constraints.MaxNorm(2.0)(w)
    norms = np.sqrt((m ** 2).sum(axis=0))
    assert np.all(norms <= 2.0 + 1e-5)
    np.testing.assert_array_equal(constraints.NonNeg()(w), np.maximum(w, 0))
    u = constraints.UnitNorm(axis=1)(w[[0, 2]])
    np.testing.assert_allclose(np.sqrt((u ** 2).sum(axis=1)), 1.0, rtol=1e-5)
    mm = constraints.MinMaxNorm(min_value=1.0, max_value=1.5)(w)
    assert np.all(np.sqrt((mm ** 2).sum(axis=0)) <= 1.5 + 1e-5)
    assert isinstance(constraints.get("max_norm"), constraints.MaxNorm)
    assert constraints.get({"class_name": "MaxNorm", "config": {"max_value": 3}}).max_value == 3
    with pytest.raises(ValueError, match="Unknown constraint"):
        constraints.get("max_nrm")  # ("maxnorm" is Keras 2's spelling, kept)
