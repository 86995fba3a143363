"""A cumsum along the batch axis mixes the samples of a batch: in a layer it is a CrossBatchError that says so
(keras.io's switch transformer counts each expert's tokens over the whole batch; the message said the cumsum
'would change its batch dim' and to do it on the data before fit), and in an activity regularizer it is
computed on the whole batch (ops/whole_batch.py), as tf.keras 3.15 computes it."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, ops  # noqa: E402
from flexflow_keras.errors import CrossBatchError  # noqa: E402

pytestmark = pytest.mark.tf
RNG = np.random.default_rng(0)
X = RNG.standard_normal((10, 3)).astype(np.float32)
Y = RNG.standard_normal((10, 2)).astype(np.float32)


def test_cumsum_over_the_batch_in_a_layer_is_a_cross_batch_error():
    inp = keras.Input((4, 3))
    flat = ops.reshape(inp, (-1, 3))
    for x in (inp, flat):
        with pytest.raises(CrossBatchError, match="rows of different samples.*along axis 1"):
            ops.cumsum(x, axis=0)
    assert ops.cumsum(inp, axis=1).shape == (None, 4, 3)


@pytest.mark.parametrize(("degree", "batch"), [(1, 4), (2, 5)])
def test_cumsum_over_the_batch_in_an_activity_regularizer_trains_as_tf_keras(request, degree, batch):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=degree)

    def model(k, kops):
        def reg(h):
            return 0.05 * kops.sum(kops.square(kops.cumsum(h, axis=0)))
        inp = k.Input((3,))
        return k.Model(inp, k.layers.Dense(2, activity_regularizer=reg)(inp))
    theirs, ours = model(tf.keras, tf.keras.ops), model(keras, ops)
    ours.set_weights(theirs.get_weights())
    for m, k in ((theirs, tf.keras), (ours, keras)):
        m.compile(optimizer=k.optimizers.SGD(0.05), loss="mse")
    want = theirs.fit(X, Y, batch_size=batch, epochs=2, shuffle=False, verbose=0).history["loss"]
    got = ours.fit(X, Y, batch_size=batch, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
