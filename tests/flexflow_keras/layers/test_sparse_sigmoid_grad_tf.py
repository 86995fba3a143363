"""sparse_sigmoid's derivative reads its input (0.5 inside (-1, 1)): fused in Dense and as an Activation
layer it trains as in tf.keras 3.15 (it was taken as computable from the output, which is 0.5 at inputs
<= -1, and trained wrong)."""

import numpy as np
import pytest

import flexflow_keras as fk


@pytest.mark.parametrize("where", ["fused", "layer"])
def test_sparse_sigmoid_trains_as_tf_keras(where):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    x = (3 * rng.standard_normal((16, 12))).astype("float32")  # many inputs outside (-1, 1)
    y = rng.integers(0, 4, 16)

    def build(lib):
        i = lib.Input((12,))
        if where == "fused":
            h = lib.layers.Dense(12, activation="sparse_sigmoid")(i)
        else:
            h = lib.layers.Activation("sparse_sigmoid")(lib.layers.Dense(12)(i))
        return lib.Model(i, lib.layers.Dense(4, activation="softmax")(h))

    fk.utils.set_random_seed(1)
    ours, theirs = build(fk), build(keras)
    theirs.set_weights(ours.get_weights())
    ours.compile(fk.optimizers.SGD(0.5), "sparse_categorical_crossentropy")
    theirs.compile(keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy")
    got = ours.fit(x, y, batch_size=8, epochs=3, verbose=0, shuffle=False).history["loss"]
    want = theirs.fit(x, y, batch_size=8, epochs=3, verbose=0, shuffle=False).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
