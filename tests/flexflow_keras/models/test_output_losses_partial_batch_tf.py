"""Each output's loss in the logs of a model with several outputs is the plain mean of its batch values,
as Keras 3.15 on TensorFlow logs it: its per-output loss trackers weigh a batch by ``y_pred.shape[0]``,
None in its traced steps, so a short last batch counts as a full one there (the total "loss" stays weighted
by batch size; with compile(run_eagerly=True) Keras weighs them by batch size too). We weighted them by batch
size in both modes: with 40 samples in batches of 16, fit's and evaluate's
reg_loss and cls_loss differed from tf.keras' (3.377 against 3.246) while the total agreed."""

import numpy as np
import pytest

import flexflow_keras

rng = np.random.default_rng(0)
X = rng.normal(size=(40, 4)).astype("float32")
Y_REG = rng.normal(size=(40, 1)).astype("float32")
Y_CLS = np.eye(3, dtype="float32")[rng.integers(0, 3, 40)]
W = [rng.normal(size=s).astype("float32") * 0.5 for s in [(4, 1), (1,), (4, 3), (3,)]]
Y = {"reg": Y_REG, "cls": Y_CLS}


def _model(lib, run_eagerly=False):
    inp = lib.Input((4,), name="x")
    reg = lib.layers.Dense(1, name="reg")(inp)
    cls = lib.layers.Dense(3, activation="softmax", name="cls")(inp)
    model = lib.Model(inp, {"reg": reg, "cls": cls})
    model.get_layer("reg").set_weights(W[:2])
    model.get_layer("cls").set_weights(W[2:])
    model.compile(lib.optimizers.SGD(0.05), loss={"reg": "mse", "cls": "categorical_crossentropy"},
                  loss_weights={"reg": 0.3, "cls": 2.0}, metrics={"reg": ["mae"]}, run_eagerly=run_eagerly)
    return model


def _batch_losses(model):
    return [model.test_on_batch(X[s], {k: v[s] for k, v in Y.items()}, return_dict=True)
            for s in (slice(0, 16), slice(16, 32), slice(32, 40))]


def test_output_losses_are_plain_batch_means():
    model = _model(flexflow_keras)
    logs = model.evaluate(X, Y, batch_size=16, verbose=0, return_dict=True)
    batches = _batch_losses(model)
    for key in ("reg_loss", "cls_loss"):
        assert logs[key] == pytest.approx(np.mean([b[key] for b in batches]), rel=1e-6)
    total = np.dot([16, 16, 8], [b["loss"] for b in batches]) / 40
    assert logs["loss"] == pytest.approx(total, rel=1e-6)


def _run(lib, run_eagerly):
    model = _model(lib, run_eagerly)
    history = model.fit(X, Y, epochs=2, batch_size=16, verbose=0, shuffle=False, validation_data=(X[:20], {
        k: v[:20] for k, v in Y.items()}), validation_batch_size=8).history
    return history, model.evaluate(X, Y, batch_size=16, verbose=0, return_dict=True)


@pytest.mark.parametrize("run_eagerly", [False, True])  # Keras' eager steps weigh them by batch size
def test_fit_and_evaluate_logs_as_tf_keras(run_eagerly):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _run(flexflow_keras, run_eagerly), _run(keras, run_eagerly)
    assert sorted(ours[0]) == sorted(theirs[0])
    for key in theirs[0]:
        np.testing.assert_allclose(ours[0][key], theirs[0][key], rtol=2e-5, err_msg=key)
    assert sorted(ours[1]) == sorted(theirs[1])
    for key in theirs[1]:
        np.testing.assert_allclose(ours[1][key], theirs[1][key], rtol=2e-5, err_msg=key)
