"""A model overriding only train_step, fit eagerly with validation (keras.io's debugging tips: run_eagerly=True,
validation_split=0.1), validates with Keras 3's default test_step: inference predictions, the compiled loss in
the loss tracker, the compiled metrics. It stopped with 'validation of a custom train_step runs the model's
test_step(); define one'. History and evaluate now equal tf.keras 3.15's."""

import numpy as np
import pytest

import flexflow_keras

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
pytestmark = pytest.mark.tf

RS = np.random.RandomState(0)
X, Y = RS.rand(24, 6).astype("float32"), RS.randint(0, 3, 24)


def _run(lib, tape_cls):
    class MyModel(lib.Model):
        def train_step(self, data):
            x, y = data
            with tape_cls() as tape:
                pred = self(x, training=True)
                loss = self.compute_loss(x=x, y=y, y_pred=pred)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            return self.compute_metrics(x, y, pred)

    inp = lib.Input((6,))
    out = lib.layers.Dense(3, activation="softmax")(lib.layers.Dense(8, activation="relu")(inp))
    model = MyModel(inp, out)
    model.set_weights([np.random.RandomState(i).randn(*w.shape).astype("float32") for i, w in
                       enumerate(model.get_weights())])
    model.compile(lib.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=["accuracy"], run_eagerly=True)
    hist = model.fit(X, Y, batch_size=8, epochs=2, validation_split=1 / 3, shuffle=False, verbose=0).history
    return {k: hist[k] for k in ("val_loss", "val_accuracy")}, model.evaluate(X, Y, batch_size=16, verbose=0)


def test_validation_and_evaluate_run_keras_default_test_step():
    from flexflow_keras.ops.tape import GradientTape

    ours, ours_eval = _run(flexflow_keras, GradientTape)
    theirs, theirs_eval = _run(keras, tf.GradientTape)
    assert sorted(ours) == sorted(theirs)
    for k in theirs:
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-5)
    np.testing.assert_allclose(ours_eval, theirs_eval, rtol=1e-5)
