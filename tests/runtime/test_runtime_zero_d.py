"""0-d regions (a scalar constant or weight): their boxes select a view, so writes land in the region."""

import numpy as np

from runtime.geometry import box_slices


def test_zero_d_box_selects_a_view():
    a = np.zeros((), np.float32)
    a[box_slices(((), ()))] = 3.0
    assert a == 3.0
    b = np.zeros((4, 3))
    b[box_slices(((1, 0), (3, 2)))] = 1.0
    assert b.sum() == 4.0


def test_zero_d_constant_in_a_model():
    from flexflow_keras import layers, models, ops

    x = layers.Input((3,))
    model = models.Model(x, ops.add(x, ops.constant(np.float32(2.0))))
    np.testing.assert_array_equal(model.predict(np.ones((2, 3), "float32"), verbose=0), np.full((2, 3), 3.0))
