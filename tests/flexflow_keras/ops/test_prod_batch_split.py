"""ops.prod over a non-batch axis under a batch split: each piece reads its own rows and the whole reduced
axis (ProdOp.tile). The default tile lined the dims up from the right, and a (N, 4, 6) -> (N, 6) piece
failed to reshape ("cannot reshape array of size 48 into shape (4,6)")."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, layers, ops
from flexflow_keras.ops.strategy import ParallelConfig, Strategy


def _fit(split: bool, keepdims: bool):
    config.reset()
    config.set(cpus=2, data_parallel_degree=1)
    keras.utils.set_random_seed(1)
    i = keras.Input((24,))
    a = layers.Reshape((4, 6))(layers.Dense(24)(i))
    p = ops.prod(a * 0.1 + 1.0, axis=1, keepdims=keepdims)
    if keepdims:
        p = layers.Reshape((6,))(p)
    model = keras.Model(i, layers.Dense(4, activation="softmax")(p))
    strategy = Strategy({"prod": ParallelConfig((2, 1, 1) if keepdims else (2, 1), (0, 1), 1)}, "t") if split else None
    model.compile("sgd", "sparse_categorical_crossentropy", strategy=strategy)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 24)).astype("float32"), rng.integers(0, 4, 16)
    hist = model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    return hist.history["loss"], model.get_weights(), model.predict(x, verbose=0)


@pytest.mark.parametrize("keepdims", [False, True])
def test_prod_split_along_the_batch_trains_as_on_one_processor(keepdims):
    loss1, w1, p1 = _fit(False, keepdims)
    loss2, w2, p2 = _fit(True, keepdims)
    np.testing.assert_allclose(loss2, loss1, rtol=1e-6)
    np.testing.assert_allclose(p2, p1, rtol=1e-5, atol=1e-7)
    for a, b in zip(w2, w1, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
