"""tf.Variable's assignments as TensorFlow's (handson-ml3 ch. 12 "Variables"): `assign` returns the
variable, a slice assigns into it (``v[0, 1].assign(42)``, ``v[:, 2].assign([0., 1.])``), `scatter_nd_update`,
`scatter_update` of a `tf.IndexedSlices`, and item assignment is a TypeError. Before: a slice had no
`assign`, the scatter methods and tf.IndexedSlices did not exist, and `assign` returned None."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras.keras_alias import _TensorFlow  # noqa: E402

FFTF = _TensorFlow("tensorflow")


def _run(T):
    v = T.Variable([[1., 2., 3.], [4., 5., 6.]])
    steps = [np.array(v.assign(2 * v)), np.array(v[0, 1].assign(42)), np.array(v[:, 2].assign([0., 1.])),
             np.array(v.scatter_nd_update(indices=[[0, 0], [1, 2]], updates=[100., 200.])),
             np.array(v.scatter_update(T.IndexedSlices(values=[[1., 2., 3.], [4., 5., 6.]], indices=[1, 0]))),
             np.array(v.assign_add([[1., 1., 1.], [0., 0., 0.]])), np.array(v.assign_sub(v))]
    with pytest.raises(TypeError):
        v[1] = [7., 8., 9.]
    return steps


def test_variable_assignments_as_tensorflow():
    for got, want in zip(_run(FFTF), _run(tf), strict=True):
        np.testing.assert_array_equal(got, want)
