"""A Sequential may hold the same layer more than once (``Sequential([dense, block1, block1, block1])``, as
Géron's handson-ml3 chapter 12 builds its residual regressor), as Keras 3 allows: only a *different* layer
with a taken name is refused. Before: "need unique names; 'residual_block' is already the name of one of its
layers"."""

import numpy as np
import pytest

import flexflow_keras as ff


def _run(lib):
    shared = lib.layers.Dense(3, activation="tanh")
    model = lib.Sequential([lib.Input((3,)), lib.layers.Dense(3), shared, shared, shared, lib.layers.Dense(1)])
    model.set_weights([np.linspace(-0.5, 0.5, w.size).reshape(w.shape).astype("float32")
                       for w in model.get_weights()])
    names = [layer.name == shared.name for layer in model.layers]
    model.compile(lib.optimizers.SGD(0.05), "mse")
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
    hist = model.fit(x, x[:, :1], batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    popped = model.pop()
    return names, len(model.weights), hist, popped is not shared, [w.shape for w in model.get_weights()]


def test_a_layer_repeated_in_a_sequential_trains_as_tf_keras():
    tf = pytest.importorskip("tensorflow")
    ours, theirs = _run(ff), _run(tf.keras)
    assert ours[0] == theirs[0] == [False, True, True, True, False]
    assert ours[1] == theirs[1] == 4  # after the pop: the first Dense and the shared one
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-5)
    assert ours[3:] == theirs[3:]


def test_another_layer_with_a_taken_name_is_refused():
    with pytest.raises(ValueError, match="unique names"):
        ff.Sequential([ff.layers.Dense(2, name="d"), ff.layers.Dense(2, name="d")])
