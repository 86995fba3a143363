"""ops.tensordot over the batch axis of a model's symbolic tensors (keras.io's collaborative filtering:
``ops.tensordot(user_vector, movie_vector, 2)`` of two (batch, 8) embeddings, one number for the whole batch)
stops with an error naming tensordot, the shapes, and the per-sample form; it named an einsum 'ab,ab->' the
script never wrote. Contractions that keep the batch still work."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import ops
from flexflow_keras.errors import CrossBatchError


def test_contracting_the_batch_names_tensordot_and_the_fix():
    u, m = keras.Input((8,)), keras.Input((8,))
    with pytest.raises(CrossBatchError, match=r"ops\.tensordot\(x1, x2, axes=2\) of shapes \(None, 8\) and "
                                              r"\(None, 8\) contracts the batch axis.*ops\.sum\(ops\.multiply"):
        ops.tensordot(u, m, 2)


def test_contractions_that_keep_the_batch_run():
    x = keras.Input((3, 4))
    y = ops.tensordot(x, np.ones((4, 2), "float32"), 1)
    model = keras.Model(x, y)
    data = np.arange(24, dtype="float32").reshape(2, 3, 4)
    np.testing.assert_allclose(model.predict(data, verbose=0), data @ np.ones((4, 2)), rtol=1e-6)
    np.testing.assert_allclose(ops.tensordot(np.ones((2, 3)), np.ones((2, 3)), 2), 6.0)  # eager: any axes
