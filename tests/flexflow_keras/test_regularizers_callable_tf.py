"""A regularizer that is any callable of the weight, as Keras 3 takes it (a function, or a `Regularizer`
subclass defining only `__call__`, as in Géron's handson-ml3 chapter 12), trains as tf.keras 3.15: its value
is added to the loss and its gradient (by autodiff) to the weight's. Before: fit stopped in the optimizer
task with "'function' object has no attribute 'penalty'" (or "MyL1Regularizer must implement penalty(w)")."""

import numpy as np
import pytest

import flexflow_keras as ff


def _regularizers(lib):
    def my_l1(weights):
        return lib.ops.sum(lib.ops.abs(0.01 * weights))

    class MyL1(lib.regularizers.Regularizer):
        def __init__(self, factor):
            self.factor = factor

        def __call__(self, weights):
            return lib.ops.sum(lib.ops.square(self.factor * weights)) + lib.ops.sum(lib.ops.abs(weights)) * 0.001

        def get_config(self):
            return {"factor": self.factor}

    return {"function": my_l1, "subclass": MyL1(0.1)}


def _run(lib, kind):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 2)).astype("float32")
    inp = lib.Input((4,))
    dense = lib.layers.Dense(2, kernel_regularizer=_regularizers(lib)[kind])
    model = lib.Model(inp, dense(inp))
    model.set_weights([np.linspace(-1, 1, w.size).reshape(w.shape).astype("float32") for w in model.get_weights()])
    model.compile(lib.optimizers.SGD(0.1), "mse")
    hist = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history["loss"]
    return hist, model.get_weights()[0], model.evaluate(x, y, verbose=0), float(np.asarray(model.losses[0]))


@pytest.mark.parametrize("kind", ["function", "subclass"])
def test_callable_regularizer_trains_as_tf_keras(kind):
    tf = pytest.importorskip("tensorflow")
    ours, theirs = _run(ff, kind), _run(tf.keras, kind)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose([ours[2], ours[3]], [theirs[2], theirs[3]], rtol=1e-5)


def test_penalty_and_gradient_of_a_function():
    w = np.array([[1.0, -2.0], [0.0, 3.0]], "float32")
    value, grad = ff.regularizers.penalty_and_gradient(lambda v: ff.ops.sum(ff.ops.square(v)) * 0.5, w)
    assert value == pytest.approx(7.0)
    np.testing.assert_allclose(grad, w)
    with pytest.raises(ValueError, match="must return a scalar"):
        ff.regularizers.penalty_and_gradient(lambda v: None, w)
