"""Eager results answer TensorFlow's tensor interface: metric results and calls (`.numpy()`), the loss
functions of keras.losses, and slices of a variable that a GradientTape differentiates."""

import pickle

import numpy as np

import flexflow_keras as keras
from flexflow_keras.ops.tape import GradientTape
from flexflow_keras.variables import tf_variable


def test_metric_results_answer_numpy_and_stay_floats():
    m = keras.metrics.Mean()
    m.update_state([1.0, 2.0])
    r = m.result()
    assert isinstance(r, float) and r.numpy() == np.float32(1.5) and f"{r:.2f}" == "1.50"
    assert type(pickle.loads(pickle.dumps(r))) is float
    y, p = np.ones((2, 3), "float32"), np.full((2, 3), 2.0, "float32")
    assert keras.metrics.CosineSimilarity()(y, p).numpy() == np.float32(1.0)

    class Custom(keras.metrics.Metric):  # a user's metric written the Keras way
        def __init__(self):
            super().__init__(name="custom")
            self.total = self.add_variable(shape=(), initializer="zeros", name="total")

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.total.assign_add(float(np.sum(y_pred)))

        def result(self):
            return float(self.total.numpy())

    c = Custom()
    c.update_state(y, p)
    assert c.result().numpy() == np.float32(12.0)


def test_loss_functions_return_tensors():
    y, p = np.ones((2, 3), "float32"), np.zeros((2, 3), "float32")
    for fn in (keras.losses.mean_squared_error, keras.losses.binary_crossentropy, keras.losses.mse,
               keras.losses.huber):
        out = fn(y, p)
        assert out.numpy().shape == (2,)
    assert isinstance(keras.losses.get(keras.losses.mean_squared_error), keras.losses.MeanSquaredError)


def test_slices_of_a_variable_are_differentiated():
    v = tf_variable(np.arange(6, dtype="float32").reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(v[:, 1:]), [[1, 2], [4, 5]])
    with GradientTape() as tape:
        loss = keras.ops.sum(keras.ops.square(v[:, 1:] - v[:, :-1]))
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v)), [[-2, 0, 2], [-2, 0, 2]])


def test_batch_logs_are_in_keras_order_as_the_epoch_logs():
    seen = []

    class Keys(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(list(logs))

        def on_epoch_end(self, epoch, logs=None):
            seen.append(list(logs))

    rng = np.random.default_rng(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(rng.random((16, 4)).astype("float32"), rng.integers(0, 2, 16), batch_size=8, verbose=0,
              callbacks=[Keys()])
    assert seen == [["accuracy", "loss"]] * 3
